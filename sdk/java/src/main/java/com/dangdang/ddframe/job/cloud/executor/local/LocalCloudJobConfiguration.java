package com.dangdang.ddframe.job.cloud.executor.local;

import com.dangdang.ddframe.job.config.JobRootConfiguration;
import com.dangdang.ddframe.job.config.JobTypeConfiguration;

/**
 * What {@link LocalTaskExecutor} runs (2.x): a job's type configuration, the shard, and
 * optionally the Spring bean that is the job.
 */
public final class LocalCloudJobConfiguration implements JobRootConfiguration {

    private final JobTypeConfiguration typeConfig;

    private final int shardingItem;

    private String beanName;

    private String applicationContext;

    public LocalCloudJobConfiguration(final JobTypeConfiguration typeConfig, final int shardingItem) {
        this.typeConfig = typeConfig;
        this.shardingItem = shardingItem;
    }

    public LocalCloudJobConfiguration(final JobTypeConfiguration typeConfig, final int shardingItem, final String beanName, final String applicationContext) {
        this(typeConfig, shardingItem);
        this.beanName = beanName;
        this.applicationContext = applicationContext;
    }

    @Override
    public JobTypeConfiguration getTypeConfig() {
        return typeConfig;
    }

    public int getShardingItem() {
        return shardingItem;
    }

    public String getBeanName() {
        return beanName;
    }

    public String getApplicationContext() {
        return applicationContext;
    }

    public String getJobName() {
        return typeConfig.getCoreConfig().getJobName();
    }
}

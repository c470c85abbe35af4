package com.dangdang.ddframe.job.config.simple;

import com.dangdang.ddframe.job.api.JobType;
import com.dangdang.ddframe.job.config.JobCoreConfiguration;
import com.dangdang.ddframe.job.config.JobTypeConfiguration;

/**
 * A 2.x simple job's configuration.
 */
public final class SimpleJobConfiguration implements JobTypeConfiguration {

    private final JobCoreConfiguration coreConfig;

    private final String jobClass;

    public SimpleJobConfiguration(final JobCoreConfiguration coreConfig, final String jobClass) {
        this.coreConfig = coreConfig;
        this.jobClass = jobClass;
    }

    @Override
    public JobCoreConfiguration getCoreConfig() {
        return coreConfig;
    }

    @Override
    public JobType getJobType() {
        return JobType.SIMPLE;
    }

    @Override
    public String getJobClass() {
        return jobClass;
    }
}

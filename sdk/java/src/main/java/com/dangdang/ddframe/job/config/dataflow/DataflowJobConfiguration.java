package com.dangdang.ddframe.job.config.dataflow;

import com.dangdang.ddframe.job.api.JobType;
import com.dangdang.ddframe.job.config.JobCoreConfiguration;
import com.dangdang.ddframe.job.config.JobTypeConfiguration;

/**
 * A 2.x dataflow job's configuration.
 */
public final class DataflowJobConfiguration implements JobTypeConfiguration {

    private final JobCoreConfiguration coreConfig;

    private final String jobClass;

    private final boolean streamingProcess;

    public DataflowJobConfiguration(final JobCoreConfiguration coreConfig, final String jobClass, final boolean streamingProcess) {
        this.coreConfig = coreConfig;
        this.jobClass = jobClass;
        this.streamingProcess = streamingProcess;
    }

    @Override
    public JobCoreConfiguration getCoreConfig() {
        return coreConfig;
    }

    @Override
    public JobType getJobType() {
        return JobType.DATAFLOW;
    }

    @Override
    public String getJobClass() {
        return jobClass;
    }

    public boolean isStreamingProcess() {
        return streamingProcess;
    }
}

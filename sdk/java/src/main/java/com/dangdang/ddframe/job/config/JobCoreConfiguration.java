package com.dangdang.ddframe.job.config;

import com.dangdang.ddframe.job.executor.handler.JobProperties;

/**
 * A 2.x job's core configuration. Build it with {@link #newBuilder(String, String, int)}.
 */
public final class JobCoreConfiguration {

    private final String jobName;

    private final String cron;

    private final int shardingTotalCount;

    private final String shardingItemParameters;

    private final String jobParameter;

    private final boolean failover;

    private final boolean misfire;

    private final String description;

    private final JobProperties jobProperties;

    private JobCoreConfiguration(final Builder b) {
        jobName = b.jobName;
        cron = b.cron;
        shardingTotalCount = b.shardingTotalCount;
        shardingItemParameters = b.shardingItemParameters;
        jobParameter = b.jobParameter;
        failover = b.failover;
        misfire = b.misfire;
        description = b.description;
        jobProperties = b.jobProperties;
    }

    /**
     * Starts a configuration.
     *
     * @param jobName the job
     * @param cron its cron
     * @param shardingTotalCount its shard count
     * @return a builder
     */
    public static Builder newBuilder(final String jobName, final String cron, final int shardingTotalCount) {
        return new Builder(jobName, cron, shardingTotalCount);
    }

    public String getJobName() {
        return jobName;
    }

    public String getCron() {
        return cron;
    }

    public int getShardingTotalCount() {
        return shardingTotalCount;
    }

    public String getShardingItemParameters() {
        return shardingItemParameters;
    }

    public String getJobParameter() {
        return jobParameter;
    }

    public boolean isFailover() {
        return failover;
    }

    public boolean isMisfire() {
        return misfire;
    }

    public String getDescription() {
        return description;
    }

    public JobProperties getJobProperties() {
        return jobProperties;
    }

    /**
     * Builds a {@link JobCoreConfiguration}.
     */
    public static class Builder {

        private final String jobName;

        private final String cron;

        private final int shardingTotalCount;

        private String shardingItemParameters = "";

        private String jobParameter = "";

        private boolean failover;

        private boolean misfire = true;

        private String description = "";

        private final JobProperties jobProperties = new JobProperties();

        private Builder(final String jobName, final String cron, final int shardingTotalCount) {
            this.jobName = jobName;
            this.cron = cron;
            this.shardingTotalCount = shardingTotalCount;
        }

        public Builder shardingItemParameters(final String shardingItemParameters) {
            if (null != shardingItemParameters) {
                this.shardingItemParameters = shardingItemParameters;
            }
            return this;
        }

        public Builder jobParameter(final String jobParameter) {
            if (null != jobParameter) {
                this.jobParameter = jobParameter;
            }
            return this;
        }

        public Builder failover(final boolean failover) {
            this.failover = failover;
            return this;
        }

        public Builder misfire(final boolean misfire) {
            this.misfire = misfire;
            return this;
        }

        public Builder description(final String description) {
            if (null != description) {
                this.description = description;
            }
            return this;
        }

        public Builder jobProperties(final String key, final String value) {
            jobProperties.put(key, value);
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalArgumentException when jobName or cron is empty or shardingTotalCount is not positive
         */
        public final JobCoreConfiguration build() {
            if (null == jobName || jobName.isEmpty()) {
                throw new IllegalArgumentException("jobName can not be empty.");
            }
            if (null == cron || cron.isEmpty()) {
                throw new IllegalArgumentException("cron can not be empty.");
            }
            if (shardingTotalCount <= 0) {
                throw new IllegalArgumentException("shardingTotalCount should larger than zero.");
            }
            return new JobCoreConfiguration(this);
        }
    }
}

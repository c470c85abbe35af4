package org.apache.shardingsphere.elasticjob.api;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedList;
import java.util.Properties;

/**
 * A job's configuration, as {@code LocalTaskExecutor} takes it. Build it with
 * {@link #newBuilder(String, int)}.
 */
public final class JobConfiguration {

    private final String jobName;

    private final String cron;

    private final String timeZone;

    private final int shardingTotalCount;

    private final String shardingItemParameters;

    private final String jobParameter;

    private final boolean monitorExecution;

    private final boolean failover;

    private final boolean misfire;

    private final int maxTimeDiffSeconds;

    private final int reconcileIntervalMinutes;

    private final String jobShardingStrategyType;

    private final String jobExecutorServiceHandlerType;

    private final String jobErrorHandlerType;

    private final Collection<String> jobListenerTypes;

    private final Collection<JobExtraConfiguration> extraConfigurations;

    private final String description;

    private final Properties props;

    private final boolean disabled;

    private final boolean overwrite;

    private final String label;

    private final boolean staticSharding;

    private JobConfiguration(final Builder b) {
        jobName = b.jobName;
        cron = b.cron;
        timeZone = b.timeZone;
        shardingTotalCount = b.shardingTotalCount;
        shardingItemParameters = b.shardingItemParameters;
        jobParameter = b.jobParameter;
        monitorExecution = b.monitorExecution;
        failover = b.failover;
        misfire = b.misfire;
        maxTimeDiffSeconds = b.maxTimeDiffSeconds;
        reconcileIntervalMinutes = b.reconcileIntervalMinutes;
        jobShardingStrategyType = b.jobShardingStrategyType;
        jobExecutorServiceHandlerType = b.jobExecutorServiceHandlerType;
        jobErrorHandlerType = b.jobErrorHandlerType;
        jobListenerTypes = b.jobListenerTypes;
        extraConfigurations = b.extraConfigurations;
        description = b.description;
        props = b.props;
        disabled = b.disabled;
        overwrite = b.overwrite;
        label = b.label;
        staticSharding = b.staticSharding;
    }

    /**
     * Starts a configuration.
     *
     * @param jobName the job's name
     * @param shardingTotalCount the number of shards
     * @return a builder
     */
    public static Builder newBuilder(final String jobName, final int shardingTotalCount) {
        return new Builder(jobName, shardingTotalCount);
    }

    public String getJobName() {
        return jobName;
    }

    public String getCron() {
        return cron;
    }

    public String getTimeZone() {
        return timeZone;
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

    public boolean isMonitorExecution() {
        return monitorExecution;
    }

    public boolean isFailover() {
        return failover;
    }

    public boolean isMisfire() {
        return misfire;
    }

    public int getMaxTimeDiffSeconds() {
        return maxTimeDiffSeconds;
    }

    public int getReconcileIntervalMinutes() {
        return reconcileIntervalMinutes;
    }

    public String getJobShardingStrategyType() {
        return jobShardingStrategyType;
    }

    public String getJobExecutorServiceHandlerType() {
        return jobExecutorServiceHandlerType;
    }

    public String getJobErrorHandlerType() {
        return jobErrorHandlerType;
    }

    public Collection<String> getJobListenerTypes() {
        return jobListenerTypes;
    }

    public Collection<JobExtraConfiguration> getExtraConfigurations() {
        return extraConfigurations;
    }

    public String getDescription() {
        return description;
    }

    public Properties getProps() {
        return props;
    }

    public boolean isDisabled() {
        return disabled;
    }

    public boolean isOverwrite() {
        return overwrite;
    }

    public String getLabel() {
        return label;
    }

    public boolean isStaticSharding() {
        return staticSharding;
    }

    /**
     * Builds a {@link JobConfiguration}.
     */
    public static class Builder {

        private final String jobName;

        private String cron;

        private String timeZone;

        private final int shardingTotalCount;

        private String shardingItemParameters = "";

        private String jobParameter = "";

        private boolean monitorExecution = true;

        private boolean failover;

        private boolean misfire = true;

        private int maxTimeDiffSeconds = -1;

        private int reconcileIntervalMinutes = 10;

        private String jobShardingStrategyType;

        private String jobExecutorServiceHandlerType;

        private String jobErrorHandlerType;

        private final Collection<String> jobListenerTypes = new ArrayList<String>();

        private final Collection<JobExtraConfiguration> extraConfigurations = new LinkedList<JobExtraConfiguration>();

        private String description = "";

        private final Properties props = new Properties();

        private boolean disabled;

        private boolean overwrite;

        private String label;

        private boolean staticSharding;

        private Builder(final String jobName, final int shardingTotalCount) {
            this.jobName = jobName;
            this.shardingTotalCount = shardingTotalCount;
        }

        public Builder cron(final String cron) {
            if (null != cron) {
                this.cron = cron;
            }
            return this;
        }

        public Builder timeZone(final String timeZone) {
            if (null != timeZone) {
                this.timeZone = timeZone;
            }
            return this;
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

        public Builder monitorExecution(final boolean monitorExecution) {
            this.monitorExecution = monitorExecution;
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

        public Builder maxTimeDiffSeconds(final int maxTimeDiffSeconds) {
            this.maxTimeDiffSeconds = maxTimeDiffSeconds;
            return this;
        }

        public Builder reconcileIntervalMinutes(final int reconcileIntervalMinutes) {
            this.reconcileIntervalMinutes = reconcileIntervalMinutes;
            return this;
        }

        public Builder jobShardingStrategyType(final String jobShardingStrategyType) {
            if (null != jobShardingStrategyType) {
                this.jobShardingStrategyType = jobShardingStrategyType;
            }
            return this;
        }

        public Builder jobExecutorServiceHandlerType(final String jobExecutorServiceHandlerType) {
            this.jobExecutorServiceHandlerType = jobExecutorServiceHandlerType;
            return this;
        }

        public Builder jobErrorHandlerType(final String jobErrorHandlerType) {
            this.jobErrorHandlerType = jobErrorHandlerType;
            return this;
        }

        public Builder jobListenerTypes(final String... jobListenerTypes) {
            this.jobListenerTypes.addAll(Arrays.asList(jobListenerTypes));
            return this;
        }

        public Builder addExtraConfigurations(final JobExtraConfiguration extraConfig) {
            extraConfigurations.add(extraConfig);
            return this;
        }

        public Builder description(final String description) {
            if (null != description) {
                this.description = description;
            }
            return this;
        }

        public Builder setProperty(final String key, final String value) {
            props.setProperty(key, value);
            return this;
        }

        public Builder disabled(final boolean disabled) {
            this.disabled = disabled;
            return this;
        }

        public Builder overwrite(final boolean overwrite) {
            this.overwrite = overwrite;
            return this;
        }

        public Builder label(final String label) {
            this.label = label;
            return this;
        }

        public Builder staticSharding(final boolean staticSharding) {
            this.staticSharding = staticSharding;
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         * @throws IllegalArgumentException when jobName is empty or shardingTotalCount is not positive
         */
        public final JobConfiguration build() {
            if (null == jobName || jobName.isEmpty()) {
                throw new IllegalArgumentException("jobName can not be empty.");
            }
            if (shardingTotalCount <= 0) {
                throw new IllegalArgumentException("shardingTotalCount should larger than zero.");
            }
            return new JobConfiguration(this);
        }
    }
}

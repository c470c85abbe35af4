package com.dangdang.ddframe.job.config;

/**
 * A 2.x job's root configuration.
 */
public interface JobRootConfiguration {

    /**
     * The job's type configuration.
     *
     * @return the type configuration
     */
    JobTypeConfiguration getTypeConfig();
}

package com.dangdang.ddframe.job.config;

import com.dangdang.ddframe.job.api.JobType;

/**
 * A 2.x job's type configuration: its type, class and core configuration.
 */
public interface JobTypeConfiguration {

    JobType getJobType();

    String getJobClass();

    JobCoreConfiguration getCoreConfig();
}

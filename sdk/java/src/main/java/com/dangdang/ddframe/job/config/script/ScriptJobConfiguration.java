package com.dangdang.ddframe.job.config.script;

import com.dangdang.ddframe.job.api.JobType;
import com.dangdang.ddframe.job.api.script.ScriptJob;
import com.dangdang.ddframe.job.config.JobCoreConfiguration;
import com.dangdang.ddframe.job.config.JobTypeConfiguration;

/**
 * A 2.x script job's configuration.
 */
public final class ScriptJobConfiguration implements JobTypeConfiguration {

    private final JobCoreConfiguration coreConfig;

    private final String scriptCommandLine;

    public ScriptJobConfiguration(final JobCoreConfiguration coreConfig, final String scriptCommandLine) {
        this.coreConfig = coreConfig;
        this.scriptCommandLine = scriptCommandLine;
    }

    @Override
    public JobCoreConfiguration getCoreConfig() {
        return coreConfig;
    }

    @Override
    public JobType getJobType() {
        return JobType.SCRIPT;
    }

    @Override
    public String getJobClass() {
        return ScriptJob.class.getCanonicalName();
    }

    public String getScriptCommandLine() {
        return scriptCommandLine;
    }
}

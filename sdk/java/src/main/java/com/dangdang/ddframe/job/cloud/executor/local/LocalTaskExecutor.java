package com.dangdang.ddframe.job.cloud.executor.local;

import java.util.Collections;

import com.dangdang.ddframe.job.api.JobType;
import com.dangdang.ddframe.job.config.JobCoreConfiguration;
import com.dangdang.ddframe.job.config.dataflow.DataflowJobConfiguration;
import com.dangdang.ddframe.job.config.script.ScriptJobConfiguration;
import com.github.ejcloud.elasticjob.runtime.Failure;
import com.github.ejcloud.elasticjob.runtime.Jobs;
import com.github.ejcloud.elasticjob.runtime.Shard;
import com.github.ejcloud.elasticjob.runtime.Work;

/**
 * Runs one shard of a 2.x job in this JVM, without a scheduler: SIMPLE and DATAFLOW
 * instantiate the job class (or get the Spring bean), SCRIPT runs the command line. A
 * failure is printed, as the 2.x default exception handler did.
 */
public final class LocalTaskExecutor {

    private final LocalCloudJobConfiguration localCloudJobConfiguration;

    public LocalTaskExecutor(final LocalCloudJobConfiguration localCloudJobConfiguration) {
        this.localCloudJobConfiguration = localCloudJobConfiguration;
    }

    /**
     * Executes the job's shard once.
     */
    public void execute() {
        LocalCloudJobConfiguration c = localCloudJobConfiguration;
        JobCoreConfiguration core = c.getTypeConfig().getCoreConfig();
        Shard shard = Shard.local(c.getJobName(), core.getShardingTotalCount(), core.getShardingItemParameters(), core.getJobParameter(), c.getShardingItem());
        try {
            work(c).run(shard);
            // CHECKSTYLE:OFF
        } catch (final Throwable t) {
            // CHECKSTYLE:ON
            System.err.println("Job '" + c.getJobName() + "' exception occur in job processing");
            Failure.unwrap(t).printStackTrace();
        }
    }

    private static Work work(final LocalCloudJobConfiguration c) throws Exception {
        JobType type = c.getTypeConfig().getJobType();
        if (JobType.SCRIPT == type) {
            return Jobs.typed("SCRIPT", Collections.singletonMap("script.command.line", ((ScriptJobConfiguration) c.getTypeConfig()).getScriptCommandLine()));
        }
        boolean streaming = JobType.DATAFLOW == type && ((DataflowJobConfiguration) c.getTypeConfig()).isStreamingProcess();
        String bean = null == c.getBeanName() ? "" : c.getBeanName();
        String ctx = null == c.getApplicationContext() ? "" : c.getApplicationContext();
        return Jobs.of(Jobs.instantiate(c.getTypeConfig().getJobClass(), bean, ctx), streaming);
    }
}

package org.apache.shardingsphere.elasticjob.cloud.executor.local;

import java.util.HashMap;
import java.util.Map;

import com.github.ejcloud.elasticjob.runtime.Failure;
import com.github.ejcloud.elasticjob.runtime.Jobs;
import com.github.ejcloud.elasticjob.runtime.Shard;
import com.github.ejcloud.elasticjob.runtime.Work;
import org.apache.shardingsphere.elasticjob.api.ElasticJob;
import org.apache.shardingsphere.elasticjob.api.JobConfiguration;

/**
 * Runs one shard of a job in this JVM, without a scheduler: for trying and debugging a job.
 * The shard's context is made from the configuration (task id
 * {@code <jobName>@-@<item>@-@READY@-@foo_slave_id@-@foo_uuid}, as the original's). A failure
 * goes to the configuration's jobErrorHandlerType: LOG (the default) prints it, THROW throws
 * it (wrapped in a RuntimeException), IGNORE drops it.
 */
public final class LocalTaskExecutor {

    private final ElasticJob elasticJob;

    private final String elasticJobType;

    private final JobConfiguration jobConfiguration;

    private final int shardingItem;

    public LocalTaskExecutor(final ElasticJob elasticJob, final JobConfiguration jobConfiguration, final int shardingItem) {
        this(elasticJob, null, jobConfiguration, shardingItem);
    }

    public LocalTaskExecutor(final String elasticJobType, final JobConfiguration jobConfiguration, final int shardingItem) {
        this(null, elasticJobType, jobConfiguration, shardingItem);
    }

    private LocalTaskExecutor(final ElasticJob elasticJob, final String elasticJobType, final JobConfiguration jobConfiguration, final int shardingItem) {
        this.elasticJob = elasticJob;
        this.elasticJobType = elasticJobType;
        this.jobConfiguration = jobConfiguration;
        this.shardingItem = shardingItem;
    }

    /**
     * Executes the job's shard once.
     */
    public void execute() {
        Map<String, String> props = new HashMap<String, String>();
        for (String each : jobConfiguration.getProps().stringPropertyNames()) {
            props.put(each, jobConfiguration.getProps().getProperty(each));
        }
        Shard shard = Shard.local(jobConfiguration.getJobName(), jobConfiguration.getShardingTotalCount(),
                jobConfiguration.getShardingItemParameters(), jobConfiguration.getJobParameter(), shardingItem);
        try {
            Work work = null == elasticJob ? Jobs.typed(elasticJobType, props) : Jobs.of(elasticJob, "true".equalsIgnoreCase(props.get("streaming.process")));
            work.run(shard);
            // CHECKSTYLE:OFF
        } catch (final Throwable t) {
            // CHECKSTYLE:ON
            handle(jobConfiguration.getJobErrorHandlerType(), jobConfiguration.getJobName(), t);
        }
    }

    static void handle(final String handler, final String jobName, final Throwable t) {
        String h = null == handler ? "LOG" : handler.toUpperCase();
        if ("IGNORE".equals(h)) {
            return;
        }
        if ("THROW".equals(h)) {
            Throwable e = Failure.unwrap(t);
            throw e instanceof RuntimeException ? (RuntimeException) e : new RuntimeException(e);
        }
        System.err.println("Job '" + jobName + "' exception occur in job processing");
        Failure.unwrap(t).printStackTrace();
    }
}

package org.apache.shardingsphere.elasticjob.cloud.api;

import com.github.ejcloud.elasticjob.runtime.Jobs;
import com.github.ejcloud.elasticjob.runtime.Launcher;
import com.github.ejcloud.elasticjob.runtime.Settings;
import com.github.ejcloud.elasticjob.runtime.Work;
import org.apache.shardingsphere.elasticjob.api.ElasticJob;

/**
 * Starts a job from the app's main, as the original's manual shows:
 * {@code JobBootstrap.execute(new MyJob())}. The scheduler's executor started this JVM for
 * one shard (TRANSIENT: the job runs once, then the JVM exits 0, or 1 with the exception as
 * the cause) or keeps it resident for a DAEMON job (every cron tick runs the job in this
 * JVM). Nothing here needs Mesos.
 */
public final class JobBootstrap {

    private JobBootstrap() {
    }

    /**
     * Runs a SimpleJob or DataflowJob as the executor asks, then exits the JVM.
     *
     * @param elasticJob the job
     */
    public static void execute(final ElasticJob elasticJob) {
        Launcher.launch(new Launcher.Source() {
            @Override
            public Work make(final Settings settings) {
                return Jobs.of(elasticJob, settings.streaming());
            }
        }, null);
    }

    /**
     * Runs a typed job, SCRIPT (props script.command.line) or HTTP (props http.uri), as the
     * executor asks, then exits the JVM.
     *
     * @param elasticJobType SCRIPT or HTTP
     */
    public static void execute(final String elasticJobType) {
        Launcher.launch(new Launcher.Source() {
            @Override
            public Work make(final Settings settings) {
                return Jobs.typed(elasticJobType, settings.props());
            }
        }, null);
    }
}

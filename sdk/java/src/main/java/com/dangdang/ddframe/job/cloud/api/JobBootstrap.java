package com.dangdang.ddframe.job.cloud.api;

import com.github.ejcloud.elasticjob.runtime.Jobs;
import com.github.ejcloud.elasticjob.runtime.Launcher;
import com.github.ejcloud.elasticjob.runtime.Settings;
import com.github.ejcloud.elasticjob.runtime.Work;

/**
 * Starts the job the scheduler names, from the app's main (Elastic-Job-Cloud 2.x):
 * {@code JobBootstrap.execute()}. The job is the registered jobClass (or the Spring bean
 * beanName of applicationContext), instantiated from the app's class path; the executor
 * runs it once per shard (TRANSIENT) or keeps this JVM resident (DAEMON).
 */
public final class JobBootstrap {

    private JobBootstrap() {
    }

    /**
     * Runs the registered job as the executor asks, then exits the JVM.
     */
    public static void execute() {
        Launcher.launch(new Launcher.Source() {
            @Override
            public Work make(final Settings settings) throws Exception {
                Object job = Jobs.instantiate(settings.get(Settings.JOB_CLASS), settings.get(Settings.BEAN_NAME), settings.get(Settings.APPLICATION_CONTEXT));
                return Jobs.of(job, settings.streaming());
            }
        }, null);
    }
}

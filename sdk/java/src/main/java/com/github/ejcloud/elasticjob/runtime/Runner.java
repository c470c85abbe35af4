package com.github.ejcloud.elasticjob.runtime;

/**
 * The main class the executor starts for a job that names its class (the practice guide's
 * jarPath and jobClass, the 2.x register body's jobClass, or beanName and
 * applicationContext): {@code java -cp <app jar> Runner <jobClass> [<sharding context>]}.
 */
public final class Runner {

    private Runner() {
    }

    /**
     * Runs the job class named by the first argument (or ELASTICJOB_JOB_CLASS).
     *
     * @param args the job class, then optionally the sharding context JSON
     */
    public static void main(final String[] args) {
        final String cls = args.length > 0 && !args[0].trim().startsWith("{") ? args[0] : null;
        String ctx = args.length > 0 && args[args.length - 1].trim().startsWith("{") ? args[args.length - 1] : null;
        if (args.length == 1 && "--version".equals(args[0])) {
            System.out.println("elasticjob-cloud-executor (ElasticJob-Cloud in Go): runs SimpleJob and DataflowJob classes for the executor");
            return;
        }
        Launcher.launch(new Launcher.Source() {
            @Override
            public Work make(final Settings settings) throws Exception {
                String jobClass = null != cls ? cls : settings.get(Settings.JOB_CLASS);
                Object job = Jobs.instantiate(jobClass, settings.get(Settings.BEAN_NAME), settings.get(Settings.APPLICATION_CONTEXT));
                return Jobs.of(job, settings.streaming());
            }
        }, ctx);
    }
}

package com.github.ejcloud.elasticjob.runtime;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Runs a job the way the scheduler's executor asks: once for the shard it was handed
 * (the last argument or ELASTICJOB_SHARDING_CONTEXT; exit 0, or 1 with the cause), or,
 * resident (ELASTICJOB_DAEMON_PROTOCOL=1), once per RUN line on fd 3 until fd 3 ends.
 */
public final class Launcher {

    /**
     * Makes the job's work; a failure here fails every run with its cause.
     */
    public interface Source {

        /**
         * Makes the work.
         *
         * @param settings what the executor passed
         * @return the work
         * @throws Exception why it cannot be made
         */
        Work make(Settings settings) throws Exception;
    }

    private Launcher() {
    }

    /**
     * Runs the job and exits the JVM: 0 when it succeeded (or, resident, when the executor
     * closed the protocol), 1 when it failed, 2 when there is nothing to run.
     *
     * @param source the job
     * @param contextArg the sharding context JSON given as an argument, or null
     */
    public static void launch(final Source source, final String contextArg) {
        int code;
        try {
            code = run(source, Settings.fromEnvironment(), contextArg);
            // CHECKSTYLE:OFF
        } catch (final Throwable t) {
            // CHECKSTYLE:ON
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    static int run(final Source source, final Settings settings, final String contextArg) throws Exception {
        Work work;
        Throwable broken = null;
        try {
            work = source.make(settings);
            // CHECKSTYLE:OFF
        } catch (final Throwable t) {
            // CHECKSTYLE:ON
            broken = t;
            work = null;
        }
        if (settings.resident()) {
            final Throwable cause = broken;
            Work w = null != work ? work : new Work() {
                @Override
                public void run(final Shard shard) throws Exception {
                    throw cause instanceof Exception ? (Exception) cause : new RuntimeException(cause);
                }
            };
            InputStream in = new FileInputStream("/proc/self/fd/3");
            OutputStream out = new FileOutputStream("/proc/self/fd/4");
            Protocol.serve(w, in, out);
            return 0;
        }
        String json = null != contextArg && contextArg.trim().startsWith("{") ? contextArg : settings.get(Settings.SHARDING_CONTEXT);
        if (json.isEmpty()) {
            System.err.println("elasticjob: no sharding context: this JVM runs jobs started by the ElasticJob-Cloud executor, which "
                    + "passes it in " + Settings.SHARDING_CONTEXT + "; to run a job by hand, use LocalTaskExecutor");
            return 2;
        }
        if (null != broken) {
            return fail(broken, settings);
        }
        try {
            work.run(Shard.fromJson(json));
            // CHECKSTYLE:OFF
        } catch (final Throwable t) {
            // CHECKSTYLE:ON
            return fail(t, settings);
        }
        return 0;
    }

    private static int fail(final Throwable t, final Settings settings) {
        Failure.unwrap(t).printStackTrace();
        String cause = Failure.describe(t);
        String file = settings.get(Settings.CAUSE_FILE);
        if (!file.isEmpty()) {
            try {
                OutputStream out = new FileOutputStream(file);
                out.write(cause.getBytes(StandardCharsets.UTF_8));
                out.close();
            } catch (final IOException ex) {
                System.err.println("elasticjob: cannot write the failure cause to " + file + ": " + ex);
            }
        }
        return 1;
    }
}

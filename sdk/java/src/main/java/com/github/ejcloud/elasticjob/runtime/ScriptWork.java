package com.github.ejcloud.elasticjob.runtime;

import java.util.Map;

/**
 * A SCRIPT job: props script.command.line run by /bin/sh with the sharding context JSON
 * as its last argument, as the scheduler's executor runs SCRIPT jobs.
 */
final class ScriptWork implements Work {

    private final String line;

    ScriptWork(final Map<String, String> props) {
        String l = props.get("script.command.line");
        if (null == l || l.trim().isEmpty()) {
            throw new IllegalArgumentException("Cannot find script command line, job is not executed.");
        }
        line = l.trim();
    }

    @Override
    public void run(final Shard shard) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", line + " \"$@\"", "sh", shard.toJson()).inheritIO();
        Process p = pb.start();
        try {
            int code = p.waitFor();
            if (code != 0) {
                throw new IllegalStateException("Execute script failure: " + line + " exited with code " + code);
            }
        } catch (final InterruptedException ex) {
            p.destroy();
            throw ex;
        }
    }
}

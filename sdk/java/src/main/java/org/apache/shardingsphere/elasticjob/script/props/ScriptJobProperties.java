package org.apache.shardingsphere.elasticjob.script.props;

/**
 * Props of script jobs.
 */
public final class ScriptJobProperties {

    public static final String SCRIPT_KEY = "script.command.line";

    private ScriptJobProperties() {
    }
}

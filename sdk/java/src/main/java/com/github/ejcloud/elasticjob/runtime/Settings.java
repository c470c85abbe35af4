package com.github.ejcloud.elasticjob.runtime;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

/**
 * What the executor tells a job process through its environment.
 */
public final class Settings {

    /** The sharding context JSON (also the last argument of a run-once process). */
    public static final String SHARDING_CONTEXT = "ELASTICJOB_SHARDING_CONTEXT";

    /** "1" when the process is resident and driven over the line protocol (fds 3 and 4). */
    public static final String DAEMON_PROTOCOL = "ELASTICJOB_DAEMON_PROTOCOL";

    /** "true" when the job's props have streaming.process=true. */
    public static final String STREAMING_PROCESS = "ELASTICJOB_STREAMING_PROCESS";

    /** The job's props as a JSON object. */
    public static final String JOB_PROPS = "ELASTICJOB_JOB_PROPS";

    /** The job's jobClass (the practice guide's and the 2.x register body's). */
    public static final String JOB_CLASS = "ELASTICJOB_JOB_CLASS";

    /** The 2.x beanName and applicationContext: the job is a bean of that Spring XML context. */
    public static final String BEAN_NAME = "ELASTICJOB_BEAN_NAME";

    public static final String APPLICATION_CONTEXT = "ELASTICJOB_APPLICATION_CONTEXT";

    /** A file the process writes its failure cause to; the executor reports it. */
    public static final String CAUSE_FILE = "ELASTICJOB_CAUSE_FILE";

    private final Map<String, String> env;

    public Settings(final Map<String, String> env) {
        this.env = env;
    }

    /**
     * The settings of this process.
     *
     * @return the settings
     */
    public static Settings fromEnvironment() {
        return new Settings(System.getenv());
    }

    /**
     * A variable's value.
     *
     * @param name the variable
     * @return its value, "" when unset
     */
    public String get(final String name) {
        String v = env.get(name);
        return null == v ? "" : v;
    }

    public boolean resident() {
        return "1".equals(get(DAEMON_PROTOCOL));
    }

    public boolean streaming() {
        return "true".equals(get(STREAMING_PROCESS)) || "true".equalsIgnoreCase(props().get("streaming.process"));
    }

    /**
     * The job's props.
     *
     * @return the props (empty when the executor passed none)
     */
    public Map<String, String> props() {
        String json = get(JOB_PROPS);
        if (json.isEmpty()) {
            return Collections.emptyMap();
        }
        Map<String, String> out = new HashMap<String, String>();
        for (Map.Entry<String, Object> e : Json.parseObject(json).entrySet()) {
            out.put(e.getKey(), null == e.getValue() ? "" : e.getValue().toString());
        }
        return out;
    }
}

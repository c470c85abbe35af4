package com.dangdang.ddframe.job.executor.handler;

import java.util.EnumMap;

/**
 * A 2.x job's properties: its exception handler and executor service handler classes.
 * Kept so that configurations compile; this runtime reports failures to the scheduler.
 */
public final class JobProperties {

    private final EnumMap<JobPropertiesEnum, String> map = new EnumMap<JobPropertiesEnum, String>(JobPropertiesEnum.class);

    /**
     * Sets a property by its key; unknown keys and null values are ignored.
     *
     * @param key job_exception_handler or executor_service_handler
     * @param value the class name
     */
    public void put(final String key, final String value) {
        JobPropertiesEnum e = JobPropertiesEnum.from(key);
        if (null != e && null != value) {
            map.put(e, value);
        }
    }

    /**
     * A property's value, or its default.
     *
     * @param e the property
     * @return the value
     */
    public String get(final JobPropertiesEnum e) {
        return map.containsKey(e) ? map.get(e) : e.getDefaultValue();
    }

    /**
     * The properties as JSON.
     *
     * @return {"job_exception_handler": ..., "executor_service_handler": ...}
     */
    public String json() {
        StringBuilder b = new StringBuilder("{");
        for (JobPropertiesEnum each : JobPropertiesEnum.values()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(each.getKey()).append("\":\"").append(get(each).replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        }
        return b.append('}').toString();
    }

    /**
     * The 2.x job properties.
     */
    public enum JobPropertiesEnum {

        JOB_EXCEPTION_HANDLER("job_exception_handler", "com.dangdang.ddframe.job.executor.handler.impl.DefaultJobExceptionHandler"),

        EXECUTOR_SERVICE_HANDLER("executor_service_handler", "com.dangdang.ddframe.job.executor.handler.impl.DefaultExecutorServiceHandler");

        private final String key;

        private final String defaultValue;

        JobPropertiesEnum(final String key, final String defaultValue) {
            this.key = key;
            this.defaultValue = defaultValue;
        }

        public String getKey() {
            return key;
        }

        public String getDefaultValue() {
            return defaultValue;
        }

        /**
         * The property of a key.
         *
         * @param key the key
         * @return the property, or null
         */
        public static JobPropertiesEnum from(final String key) {
            for (JobPropertiesEnum each : values()) {
                if (each.key.equals(key)) {
                    return each;
                }
            }
            return null;
        }
    }
}

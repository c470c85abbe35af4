package com.github.ejcloud.elasticjob.runtime;

import java.util.List;
import java.util.Map;

import org.apache.shardingsphere.elasticjob.dataflow.job.DataflowJob;
import org.apache.shardingsphere.elasticjob.simple.job.SimpleJob;

/**
 * Turns a job object (either API, 3.x or 2.x) or a job type (SCRIPT, HTTP) into Work.
 */
public final class Jobs {

    private Jobs() {
    }

    /**
     * The work of a job object.
     *
     * @param job a SimpleJob or DataflowJob of either API
     * @param streaming whether a dataflow run fetches until a fetch returns nothing
     * @return its work
     * @throws IllegalArgumentException when the object is no job this runtime can run
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static Work of(final Object job, final boolean streaming) {
        if (null == job) {
            throw new IllegalArgumentException("the job is null");
        }
        if (job instanceof SimpleJob) {
            final SimpleJob j = (SimpleJob) job;
            return new Work() {
                @Override
                public void run(final Shard shard) {
                    j.execute(shard.context());
                }
            };
        }
        if (job instanceof DataflowJob) {
            final DataflowJob j = (DataflowJob) job;
            return new Work() {
                @Override
                public void run(final Shard shard) {
                    do {
                        List data = j.fetchData(shard.context());
                        if (null == data || data.isEmpty()) {
                            return;
                        }
                        j.processData(shard.context(), data);
                    } while (streaming && !Thread.currentThread().isInterrupted());
                }
            };
        }
        if (job instanceof com.dangdang.ddframe.job.api.simple.SimpleJob) {
            final com.dangdang.ddframe.job.api.simple.SimpleJob j = (com.dangdang.ddframe.job.api.simple.SimpleJob) job;
            return new Work() {
                @Override
                public void run(final Shard shard) {
                    j.execute(shard.legacyContext());
                }
            };
        }
        if (job instanceof com.dangdang.ddframe.job.api.dataflow.DataflowJob) {
            final com.dangdang.ddframe.job.api.dataflow.DataflowJob j = (com.dangdang.ddframe.job.api.dataflow.DataflowJob) job;
            return new Work() {
                @Override
                public void run(final Shard shard) {
                    do {
                        List data = j.fetchData(shard.legacyContext());
                        if (null == data || data.isEmpty()) {
                            return;
                        }
                        j.processData(shard.legacyContext(), data);
                    } while (streaming && !Thread.currentThread().isInterrupted());
                }
            };
        }
        throw new IllegalArgumentException("Class '" + job.getClass().getName()
                + "' implements neither SimpleJob nor DataflowJob (org.apache.shardingsphere.elasticjob or com.dangdang.ddframe.job)");
    }

    /**
     * The work of a typed job: SCRIPT runs props script.command.line, HTTP calls props http.uri.
     *
     * @param type SCRIPT or HTTP
     * @param props the job's props
     * @return its work
     * @throws IllegalArgumentException for another type
     */
    public static Work typed(final String type, final Map<String, String> props) {
        if ("SCRIPT".equalsIgnoreCase(type)) {
            return new ScriptWork(props);
        }
        if ("HTTP".equalsIgnoreCase(type)) {
            return new HttpWork(props);
        }
        throw new IllegalArgumentException("Cannot find executor for job type '" + type + "': SCRIPT and HTTP are the typed jobs");
    }

    /**
     * Instantiates the job a class or a Spring bean names, from the application's class path.
     *
     * @param jobClass the class (may be empty when a bean is named)
     * @param beanName the bean ("" for none)
     * @param applicationContext the Spring XML context on the class path that defines the bean
     * @return the job object
     * @throws Exception when it cannot be made
     */
    public static Object instantiate(final String jobClass, final String beanName, final String applicationContext) throws Exception {
        ClassLoader loader = ClassLoader.getSystemClassLoader();
        if (!beanName.isEmpty() && !applicationContext.isEmpty()) {
            return Beans.get(loader, applicationContext, beanName);
        }
        if (jobClass.isEmpty()) {
            throw new IllegalArgumentException("no jobClass: register the job with jobClass (or beanName and applicationContext)");
        }
        Class<?> c;
        try {
            c = Class.forName(jobClass, true, loader);
        } catch (final ClassNotFoundException ex) {
            throw new IllegalArgumentException("Class '" + jobClass + "' is not on the class path of the app", ex);
        }
        try {
            return c.getDeclaredConstructor().newInstance();
        } catch (final ReflectiveOperationException ex) {
            throw new IllegalArgumentException("Class '" + jobClass + "' initialize failure, the error message is '"
                    + Failure.unwrap(ex) + "'", Failure.unwrap(ex));
        }
    }
}

package com.github.ejcloud.elasticjob.runtime;

import java.util.HashMap;
import java.util.Map;

/**
 * A job that is a bean of a Spring XML application context (the 2.x beanName and
 * applicationContext). Spring is the app's own: this runtime calls it by reflection and
 * needs it only then.
 */
final class Beans {

    private static final String CONTEXT = "org.springframework.context.support.ClassPathXmlApplicationContext";

    private static final Map<String, Object> CONTEXTS = new HashMap<String, Object>();

    private Beans() {
    }

    static synchronized Object get(final ClassLoader loader, final String applicationContext, final String beanName) throws Exception {
        Object ctx = CONTEXTS.get(applicationContext);
        if (null == ctx) {
            Class<?> c;
            try {
                c = Class.forName(CONTEXT, true, loader);
            } catch (final ClassNotFoundException ex) {
                throw new IllegalStateException("beanName '" + beanName + "' with applicationContext '" + applicationContext
                        + "' needs Spring's context jars (spring-context and what it needs) in the app's class path", ex);
            }
            Thread.currentThread().setContextClassLoader(loader);
            ctx = c.getConstructor(String.class).newInstance(applicationContext);
            CONTEXTS.put(applicationContext, ctx);
        }
        return ctx.getClass().getMethod("getBean", String.class).invoke(ctx, beanName);
    }
}

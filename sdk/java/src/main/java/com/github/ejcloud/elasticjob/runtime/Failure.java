package com.github.ejcloud.elasticjob.runtime;

import java.lang.reflect.InvocationTargetException;

/**
 * A failure cause as the scheduler shows it: the exception and its message, then the top
 * of its stack (the job's frames, above this runtime's), then the same for its root cause.
 */
public final class Failure {

    private static final int FRAMES = 6;

    private static final int ROOT_FRAMES = 3;

    private static final int MAX = 1800;

    private Failure() {
    }

    /**
     * Describes a failure.
     *
     * @param t the failure
     * @return its cause, at most about 1800 characters
     */
    public static String describe(final Throwable t) {
        Throwable top = unwrap(t);
        StringBuilder b = new StringBuilder();
        line(b, top, FRAMES);
        Throwable root = top;
        while (null != root.getCause() && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != top) {
            b.append("\nCaused by: ");
            line(b, root, ROOT_FRAMES);
        }
        return b.length() > MAX ? b.substring(0, MAX) + " …" : b.toString();
    }

    /**
     * Strips the wrappers reflection puts around a job's own exception.
     *
     * @param t the failure
     * @return the job's exception
     */
    public static Throwable unwrap(final Throwable t) {
        Throwable out = t;
        while (out instanceof InvocationTargetException && null != out.getCause()) {
            out = out.getCause();
        }
        return out;
    }

    private static void line(final StringBuilder b, final Throwable t, final int frames) {
        b.append(t.toString());
        StackTraceElement[] stack = t.getStackTrace();
        int n = 0;
        for (StackTraceElement e : stack) {
            if (n >= frames || ours(e)) {
                break;
            }
            b.append("\n\tat ").append(e);
            n++;
        }
    }

    private static boolean ours(final StackTraceElement e) {
        String c = e.getClassName();
        return c.startsWith("com.github.ejcloud.elasticjob.runtime.") || c.startsWith("jdk.internal.reflect.")
                || c.startsWith("sun.reflect.") || c.startsWith("java.lang.reflect.Method");
    }
}

package com.github.ejcloud.elasticjob.runtime;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * The executor's line protocol for a resident process (the Go SDK's, package sdk): RUN and
 * CANCEL lines in, DONE lines out. Runs go one at a time to one worker thread (the same
 * thread every run); CANCEL interrupts it; the end of the input interrupts the run in
 * progress, waits for its answer and returns.
 */
public final class Protocol {

    private static final Object[] STOP = new Object[0];

    private final Work work;

    private final Writer out;

    private final Object lock = new Object();

    private final BlockingQueue<Object[]> runs = new LinkedBlockingQueue<Object[]>();

    private String current;

    private Thread worker;

    private Protocol(final Work work, final OutputStream out) {
        this.work = work;
        this.out = new OutputStreamWriter(out, StandardCharsets.UTF_8);
    }

    /**
     * Serves runs until the input ends.
     *
     * @param work what each run does
     * @param in RUN and CANCEL lines (fd 3)
     * @param out DONE lines (fd 4)
     * @throws IOException when the protocol cannot be read or written
     * @throws InterruptedException when interrupted while waiting for the last run
     */
    public static void serve(final Work work, final InputStream in, final OutputStream out) throws IOException, InterruptedException {
        new Protocol(work, out).loop(new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)));
    }

    private void loop(final BufferedReader in) throws IOException, InterruptedException {
        worker = new Thread(new Runnable() {
            @Override
            public void run() {
                work();
            }
        }, "elasticjob-job");
        worker.setContextClassLoader(Thread.currentThread().getContextClassLoader());
        worker.start();
        String line;
        while (null != (line = in.readLine())) {
            int sp = line.indexOf(' ');
            String verb = sp < 0 ? line : line.substring(0, sp);
            String rest = sp < 0 ? "" : line.substring(sp + 1);
            int sp2 = rest.indexOf(' ');
            String id = sp2 < 0 ? rest : rest.substring(0, sp2);
            String arg = sp2 < 0 ? "" : rest.substring(sp2 + 1);
            if ("CANCEL".equals(verb)) {
                synchronized (lock) {
                    if (id.equals(current)) {
                        worker.interrupt();
                    }
                }
            } else if ("RUN".equals(verb) && !id.isEmpty()) {
                start(id, arg);
            } else {
                System.err.println("elasticjob: protocol line ignored: " + (line.length() > 80 ? line.substring(0, 80) : line));
            }
        }
        synchronized (lock) {
            if (null != current) {
                worker.interrupt();
            }
        }
        runs.put(STOP);
        worker.join();
    }

    private void start(final String id, final String json) throws IOException {
        synchronized (lock) {
            if (null != current) {
                done(id, "run " + current + " is still in progress");
                return;
            }
            Shard shard;
            try {
                shard = Shard.fromJson(json);
            } catch (final IllegalArgumentException ex) {
                done(id, "bad sharding context: " + ex.getMessage());
                return;
            }
            current = id;
            runs.add(new Object[] {id, shard});
        }
    }

    private void work() {
        while (true) {
            Object[] run;
            try {
                run = runs.take();
            } catch (final InterruptedException ex) {
                continue; // a CANCEL that came as the last run ended
            }
            if (STOP == run) {
                return;
            }
            String failure = null;
            try {
                work.run((Shard) run[1]);
                // CHECKSTYLE:OFF
            } catch (final Throwable t) {
                // CHECKSTYLE:ON
                t.printStackTrace();
                failure = Failure.describe(t);
            }
            synchronized (lock) {
                current = null;
                try {
                    done((String) run[0], failure);
                } catch (final IOException ex) {
                    System.err.println("elasticjob: cannot answer run " + run[0] + ": " + ex);
                }
            }
            Thread.interrupted(); // a CANCEL of the run just answered
        }
    }

    private void done(final String id, final String failure) throws IOException {
        out.write(null == failure ? "DONE " + id + " ok\n" : "DONE " + id + " error " + escape(failure.isEmpty() ? "error" : failure) + "\n");
        out.flush();
    }

    /**
     * Puts a message on one line as the protocol wants it: \ → \\, newline → \n, CR → \r.
     *
     * @param s the message
     * @return the escaped message
     */
    public static String escape(final String s) {
        return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r");
    }
}

package com.github.ejcloud.elasticjob.runtime;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * An HTTP job: one request per run to props http.uri (or http.url) with http.method,
 * http.data, http.content.type and the timeouts, the sharding context in the
 * shardingContext header; 2xx succeeds.
 */
final class HttpWork implements Work {

    private final Map<String, String> props;

    private final String url;

    private final String method;

    HttpWork(final Map<String, String> props) {
        this.props = props;
        String u = props.get("http.uri");
        if (null == u || u.isEmpty()) {
            u = props.get("http.url");
        }
        if (null == u || u.isEmpty()) {
            throw new IllegalArgumentException("Cannot find http url, job is not executed: set props http.uri");
        }
        url = u;
        String m = props.get("http.method");
        method = null == m || m.isEmpty() ? "GET" : m.toUpperCase();
    }

    @Override
    public void run(final Shard shard) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
        c.setRequestMethod(method);
        c.setConnectTimeout(millis("http.connect.timeout.milliseconds", 3000));
        c.setReadTimeout(millis("http.read.timeout.milliseconds", 5000));
        c.setRequestProperty("shardingContext", shard.toJson());
        String data = props.get("http.data");
        try {
            if (null != data && !data.isEmpty() && !"GET".equals(method)) {
                String type = props.get("http.content.type");
                if (null != type && !type.isEmpty()) {
                    c.setRequestProperty("Content-Type", type);
                }
                c.setDoOutput(true);
                OutputStream out = c.getOutputStream();
                out.write(data.getBytes(StandardCharsets.UTF_8));
                out.close();
            }
            int code = c.getResponseCode();
            InputStream in = code >= 400 ? c.getErrorStream() : c.getInputStream();
            String body = null == in ? "" : read(in);
            if (code < 200 || code > 299) {
                throw new IOException("http " + method + " " + url + ": " + code + " " + c.getResponseMessage() + ": "
                        + (body.length() > 256 ? body.substring(0, 256) : body));
            }
            System.out.println(body);
        } finally {
            c.disconnect();
        }
    }

    private int millis(final String key, final int def) {
        String v = props.get(key);
        return null == v || v.isEmpty() ? def : Integer.parseInt(v);
    }

    private static String read(final InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        int n;
        try {
            while ((n = in.read(buf)) > 0) {
                b.write(buf, 0, n);
            }
        } finally {
            in.close();
        }
        return new String(b.toByteArray(), StandardCharsets.UTF_8);
    }
}

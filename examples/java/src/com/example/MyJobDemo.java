package com.example;

import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;

/**
 * The manual's MyJobDemo (§4.2.3): bin/start.sh runs it.
 */
public class MyJobDemo {

    public static void main(final String[] args) {
        JobBootstrap.execute(new MyJob());
    }
}

package com.example;

import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;
import org.apache.shardingsphere.elasticjob.simple.job.SimpleJob;

/**
 * A job for a DAEMON registration: the executor keeps this JVM and calls execute on every
 * cron tick, so what the job holds (a connection pool, a cache; here a counter) lives from
 * tick to tick. bin/daemon.sh runs it.
 */
public class MyDaemonJob implements SimpleJob {

    private int ticks;

    @Override
    public void execute(ShardingContext context) {
        ticks++;
        String pid = java.lang.management.ManagementFactory.getRuntimeMXBean().getName().split("@")[0];
        System.out.println("MyDaemonJob tick " + ticks + " in pid " + pid + " shard " + context.getShardingItem());
    }

    public static void main(final String[] args) {
        JobBootstrap.execute(new MyDaemonJob());
    }
}

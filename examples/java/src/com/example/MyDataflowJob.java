package com.example;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;
import org.apache.shardingsphere.elasticjob.dataflow.job.DataflowJob;

/**
 * A dataflow job: fetches the shard's pending orders (here: three batches of ids) and
 * processes them. With the job's props streaming.process=true one run fetches until a
 * fetch returns nothing; without it, a run fetches once. bin/dataflow.sh runs it.
 */
public class MyDataflowJob implements DataflowJob<String> {

    private int batch;

    @Override
    public List<String> fetchData(ShardingContext context) {
        if (++batch > 3) {
            return Collections.emptyList();
        }
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            ids.add("order-" + context.getShardingItem() + "-" + batch + "-" + i);
        }
        return ids;
    }

    @Override
    public void processData(ShardingContext context, List<String> data) {
        System.out.println("MyDataflowJob shard " + context.getShardingItem() + " processed " + data);
    }

    public static void main(final String[] args) {
        JobBootstrap.execute(new MyDataflowJob());
    }
}

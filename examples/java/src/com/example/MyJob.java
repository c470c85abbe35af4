package com.example;

import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.simple.job.SimpleJob;

/**
 * The manual's MyJob (§4.2.2): one shard per call, by its sharding item.
 */
public class MyJob implements SimpleJob {

    @Override
    public void execute(ShardingContext context) {
        switch (context.getShardingItem()) {
            case 0:
                // do something by sharding item 0
                break;
            case 1:
                // do something by sharding item 1
                break;
            case 2:
                // do something by sharding item 2
            // case n: ...
            default:
                break;
        }
        System.out.println("MyJob shard " + context.getShardingItem() + " of " + context.getShardingTotalCount()
                + " parameter=" + context.getShardingParameter() + " job parameter=" + context.getJobParameter()
                + " task=" + context.getTaskId());
    }
}

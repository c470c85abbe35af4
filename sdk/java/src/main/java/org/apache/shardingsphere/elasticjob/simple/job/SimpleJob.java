package org.apache.shardingsphere.elasticjob.simple.job;

import org.apache.shardingsphere.elasticjob.api.ElasticJob;
import org.apache.shardingsphere.elasticjob.api.ShardingContext;

/**
 * A job that runs one shard per call. An exception thrown fails the shard, with the
 * exception's message and the top of its stack as the cause.
 */
public interface SimpleJob extends ElasticJob {

    /**
     * Runs one shard.
     *
     * @param shardingContext the shard's context
     */
    void execute(ShardingContext shardingContext);
}

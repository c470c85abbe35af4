package com.dangdang.ddframe.job.api.simple;

import com.dangdang.ddframe.job.api.ElasticJob;
import com.dangdang.ddframe.job.api.ShardingContext;

/**
 * A job that runs one shard per call (2.x).
 */
public interface SimpleJob extends ElasticJob {

    /**
     * Runs one shard.
     *
     * @param shardingContext the shard's context
     */
    void execute(ShardingContext shardingContext);
}

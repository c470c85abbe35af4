package com.dangdang.ddframe.job.api.dataflow;

import java.util.List;

import com.dangdang.ddframe.job.api.ElasticJob;
import com.dangdang.ddframe.job.api.ShardingContext;

/**
 * A job that fetches data and processes it (2.x).
 *
 * @param <T> the type of the data
 */
public interface DataflowJob<T> extends ElasticJob {

    /**
     * Fetches the shard's next data.
     *
     * @param shardingContext the shard's context
     * @return the data; null or empty ends a streaming run
     */
    List<T> fetchData(ShardingContext shardingContext);

    /**
     * Processes what fetchData returned.
     *
     * @param shardingContext the shard's context
     * @param data the data fetched
     */
    void processData(ShardingContext shardingContext, List<T> data);
}

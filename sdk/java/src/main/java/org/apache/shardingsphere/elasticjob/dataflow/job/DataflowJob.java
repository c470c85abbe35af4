package org.apache.shardingsphere.elasticjob.dataflow.job;

import java.util.List;

import org.apache.shardingsphere.elasticjob.api.ElasticJob;
import org.apache.shardingsphere.elasticjob.api.ShardingContext;

/**
 * A job that fetches data and processes it. With the job's props
 * {@code streaming.process=true} a run fetches and processes until a fetch returns nothing.
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

package org.apache.shardingsphere.elasticjob.api;

/**
 * An ElasticJob job: implement {@code SimpleJob} or {@code DataflowJob}.
 */
public interface ElasticJob {
}

package org.apache.shardingsphere.elasticjob.api;

/**
 * Extra configuration of a job (tracing and the like); accepted, not used.
 */
public interface JobExtraConfiguration {
}

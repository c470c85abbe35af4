package com.dangdang.ddframe.job.api;

/**
 * An Elastic-Job 2.x job: implement {@code SimpleJob} or {@code DataflowJob}.
 */
public interface ElasticJob {
}

package com.dangdang.ddframe.job.api;

/**
 * The 2.x job types.
 */
public enum JobType {
    SIMPLE, DATAFLOW, SCRIPT
}

package com.dangdang.ddframe.job.api;

import com.dangdang.ddframe.job.executor.ShardingContexts;

/**
 * What one shard of a run is handed (2.x).
 */
public final class ShardingContext {

    private final String jobName;

    private final String taskId;

    private final int shardingTotalCount;

    private final String jobParameter;

    private final int shardingItem;

    private final String shardingParameter;

    public ShardingContext(final ShardingContexts shardingContexts, final int shardingItem) {
        jobName = shardingContexts.getJobName();
        taskId = shardingContexts.getTaskId();
        shardingTotalCount = shardingContexts.getShardingTotalCount();
        jobParameter = shardingContexts.getJobParameter();
        this.shardingItem = shardingItem;
        shardingParameter = shardingContexts.getShardingItemParameters().get(shardingItem);
    }

    public String getJobName() {
        return jobName;
    }

    public String getTaskId() {
        return taskId;
    }

    public int getShardingTotalCount() {
        return shardingTotalCount;
    }

    public String getJobParameter() {
        return jobParameter;
    }

    public int getShardingItem() {
        return shardingItem;
    }

    public String getShardingParameter() {
        return shardingParameter;
    }

    /**
     * The nominal instant a backfill's run stands for (RFC 3339, UTC, from ELASTICJOB_SCHEDULED_TIME), or null for any other run.
     *
     * @return the instant, or null
     */
    public String getScheduledTime() {
        String v = System.getenv("ELASTICJOB_SCHEDULED_TIME");
        return v == null || v.isEmpty() ? null : v;
    }

    @Override
    public String toString() {
        return "ShardingContext(jobName=" + jobName + ", taskId=" + taskId + ", shardingTotalCount=" + shardingTotalCount
                + ", jobParameter=" + jobParameter + ", shardingItem=" + shardingItem + ", shardingParameter=" + shardingParameter + ")";
    }
}

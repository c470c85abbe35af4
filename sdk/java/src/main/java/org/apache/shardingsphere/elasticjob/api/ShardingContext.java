package org.apache.shardingsphere.elasticjob.api;

/**
 * What one shard of a run is handed: the job, the task, the shard and its parameters.
 */
public final class ShardingContext {

    private final String jobName;

    private final String taskId;

    private final int shardingTotalCount;

    private final String jobParameter;

    private final int shardingItem;

    private final String shardingParameter;

    public ShardingContext(final String jobName, final String taskId, final int shardingTotalCount,
                           final String jobParameter, final int shardingItem, final String shardingParameter) {
        this.jobName = jobName;
        this.taskId = taskId;
        this.shardingTotalCount = shardingTotalCount;
        this.jobParameter = jobParameter;
        this.shardingItem = shardingItem;
        this.shardingParameter = shardingParameter;
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

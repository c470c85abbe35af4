package com.dangdang.ddframe.job.executor;

import java.io.Serializable;
import java.util.Map;

/**
 * The sharding contexts of one task (2.x): one job, its parameters, the items it runs.
 */
public final class ShardingContexts implements Serializable {

    private static final long serialVersionUID = -4585977349142082152L;

    private final String taskId;

    private final String jobName;

    private final int shardingTotalCount;

    private final String jobParameter;

    private final Map<Integer, String> shardingItemParameters;

    private int jobEventSamplingCount;

    private int currentJobEventSamplingCount;

    private boolean allowSendJobEvent = true;

    public ShardingContexts(final String taskId, final String jobName, final int shardingTotalCount, final String jobParameter,
                            final Map<Integer, String> shardingItemParameters) {
        this.taskId = taskId;
        this.jobName = jobName;
        this.shardingTotalCount = shardingTotalCount;
        this.jobParameter = jobParameter;
        this.shardingItemParameters = shardingItemParameters;
    }

    public ShardingContexts(final String taskId, final String jobName, final int shardingTotalCount, final String jobParameter,
                            final Map<Integer, String> shardingItemParameters, final int jobEventSamplingCount) {
        this(taskId, jobName, shardingTotalCount, jobParameter, shardingItemParameters);
        this.jobEventSamplingCount = jobEventSamplingCount;
    }

    public String getTaskId() {
        return taskId;
    }

    public String getJobName() {
        return jobName;
    }

    public int getShardingTotalCount() {
        return shardingTotalCount;
    }

    public String getJobParameter() {
        return jobParameter;
    }

    public Map<Integer, String> getShardingItemParameters() {
        return shardingItemParameters;
    }

    public int getJobEventSamplingCount() {
        return jobEventSamplingCount;
    }

    public int getCurrentJobEventSamplingCount() {
        return currentJobEventSamplingCount;
    }

    public void setCurrentJobEventSamplingCount(final int currentJobEventSamplingCount) {
        this.currentJobEventSamplingCount = currentJobEventSamplingCount;
    }

    public boolean isAllowSendJobEvent() {
        return allowSendJobEvent;
    }

    public void setAllowSendJobEvent(final boolean allowSendJobEvent) {
        this.allowSendJobEvent = allowSendJobEvent;
    }

    @Override
    public String toString() {
        return "ShardingContexts(taskId=" + taskId + ", jobName=" + jobName + ", shardingTotalCount=" + shardingTotalCount
                + ", jobParameter=" + jobParameter + ", shardingItemParameters=" + shardingItemParameters + ")";
    }
}

package com.github.ejcloud.elasticjob.runtime;

import java.util.HashMap;
import java.util.Map;

import org.apache.shardingsphere.elasticjob.api.ShardingContext;

/**
 * One shard's sharding context as the executor hands it over (JSON), convertible to both
 * APIs' ShardingContext.
 */
public final class Shard {

    private final String jobName;

    private final String taskId;

    private final int shardingTotalCount;

    private final String jobParameter;

    private final int shardingItem;

    private final String shardingParameter;

    public Shard(final String jobName, final String taskId, final int shardingTotalCount, final String jobParameter,
                 final int shardingItem, final String shardingParameter) {
        this.jobName = jobName;
        this.taskId = taskId;
        this.shardingTotalCount = shardingTotalCount;
        this.jobParameter = jobParameter;
        this.shardingItem = shardingItem;
        this.shardingParameter = shardingParameter;
    }

    /**
     * Reads a sharding context: {"jobName","taskId","shardingTotalCount","jobParameter",
     * "shardingItem","shardingParameter"}.
     *
     * @param json the JSON
     * @return the shard
     * @throws IllegalArgumentException when it is not a sharding context
     */
    public static Shard fromJson(final String json) {
        Map<String, Object> m = Json.parseObject(json);
        return new Shard(text(m.get("jobName")), text(m.get("taskId")), number(m.get("shardingTotalCount")),
                text(m.get("jobParameter")), number(m.get("shardingItem")), text(m.get("shardingParameter")));
    }

    /**
     * The shard of a job run locally, as the original's LocalTaskExecutor made it.
     *
     * @param jobName the job
     * @param total the shard count
     * @param itemParameters the job's shardingItemParameters ("0=a,1=b")
     * @param jobParameter the job's parameter
     * @param item the shard
     * @return the shard
     */
    public static Shard local(final String jobName, final int total, final String itemParameters, final String jobParameter, final int item) {
        String taskId = jobName + "@-@" + item + "@-@READY@-@foo_slave_id@-@foo_uuid";
        return new Shard(jobName, taskId, total, null == jobParameter ? "" : jobParameter, item, itemParameters(itemParameters).get(item));
    }

    /**
     * Parses shardingItemParameters ("0=Beijing,1=Shanghai").
     *
     * @param text the parameters
     * @return item to parameter
     */
    public static Map<Integer, String> itemParameters(final String text) {
        Map<Integer, String> out = new HashMap<Integer, String>();
        if (null == text || text.trim().isEmpty()) {
            return out;
        }
        for (String each : text.split(",")) {
            int eq = each.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("Sharding item parameters '" + text + "' format error");
            }
            out.put(Integer.parseInt(each.substring(0, eq).trim()), each.substring(eq + 1).trim());
        }
        return out;
    }

    private static String text(final Object v) {
        return null == v ? "" : v.toString();
    }

    private static int number(final Object v) {
        if (v instanceof Number) {
            return ((Number) v).intValue();
        }
        if (v instanceof String && !((String) v).isEmpty()) {
            return Integer.parseInt((String) v);
        }
        return 0;
    }

    /**
     * The shard as JSON, the form the executor hands it over in.
     *
     * @return the JSON
     */
    public String toJson() {
        return "{\"jobName\":" + Json.quote(jobName) + ",\"taskId\":" + Json.quote(taskId) + ",\"shardingTotalCount\":" + shardingTotalCount
                + ",\"jobParameter\":" + Json.quote(jobParameter) + ",\"shardingItem\":" + shardingItem
                + ",\"shardingParameter\":" + Json.quote(shardingParameter) + "}";
    }

    /**
     * The 3.x sharding context.
     *
     * @return the context
     */
    public ShardingContext context() {
        return new ShardingContext(jobName, taskId, shardingTotalCount, jobParameter, shardingItem, shardingParameter);
    }

    /**
     * The 2.x sharding context.
     *
     * @return the context
     */
    public com.dangdang.ddframe.job.api.ShardingContext legacyContext() {
        Map<Integer, String> params = new HashMap<Integer, String>();
        params.put(shardingItem, shardingParameter);
        return new com.dangdang.ddframe.job.api.ShardingContext(
                new com.dangdang.ddframe.job.executor.ShardingContexts(taskId, jobName, shardingTotalCount, jobParameter, params), shardingItem);
    }

    public String getJobName() {
        return jobName;
    }

    public int getShardingItem() {
        return shardingItem;
    }
}

package com.github.ejcloud.elasticjob.runtime;

/**
 * What one run of one shard does.
 */
public interface Work {

    /**
     * Runs the shard once; an exception fails the run.
     *
     * @param shard the shard
     * @throws Exception why the run failed
     */
    void run(Shard shard) throws Exception;
}

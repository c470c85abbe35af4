package org.apache.shardingsphere.elasticjob.dataflow.props;

/**
 * Props of dataflow jobs.
 */
public final class DataflowJobProperties {

    public static final String STREAM_PROCESS_KEY = "streaming.process";

    private DataflowJobProperties() {
    }
}

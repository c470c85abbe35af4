package com.dangdang.ddframe.job.api.script;

import com.dangdang.ddframe.job.api.ElasticJob;

/**
 * The 2.x marker of script jobs (the job class of a SCRIPT job).
 */
public interface ScriptJob extends ElasticJob {
}

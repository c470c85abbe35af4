-- Indexes for the history searches (history): the console filters
-- executions by job (and result) within a time range, newest first, and
-- status traces by job within a time range. With them the execution search
-- over 1,000,000 rows answers in well under 50 ms (BenchmarkSearchExecutions1M).

-- +goose Up
CREATE INDEX IF NOT EXISTS JOB_EXECUTION_LOG_JOB_SUCCESS_START_INDEX ON JOB_EXECUTION_LOG (job_name, is_success, start_time);
CREATE INDEX IF NOT EXISTS JOB_EXECUTION_LOG_JOB_START_INDEX ON JOB_EXECUTION_LOG (job_name, start_time);
CREATE INDEX IF NOT EXISTS JOB_EXECUTION_LOG_TASK_ID_INDEX ON JOB_EXECUTION_LOG (task_id);
CREATE INDEX IF NOT EXISTS JOB_STATUS_TRACE_LOG_JOB_CREATION_INDEX ON JOB_STATUS_TRACE_LOG (job_name, creation_time);

-- +goose Down
DROP INDEX IF EXISTS JOB_STATUS_TRACE_LOG_JOB_CREATION_INDEX;
DROP INDEX IF EXISTS JOB_EXECUTION_LOG_TASK_ID_INDEX;
DROP INDEX IF EXISTS JOB_EXECUTION_LOG_JOB_START_INDEX;
DROP INDEX IF EXISTS JOB_EXECUTION_LOG_JOB_SUCCESS_START_INDEX;

-- How each execution ended: SUCCEEDED, FAILED or KILLED (stopped by an operator, by the job's
-- deletion, or by a reschedule), so history tells a killed run from a failed one as the
-- statistics do (KILLED counts as neither). NULL while the execution runs. Rows written before
-- take SUCCEEDED or FAILED from is_success (a killed one stays FAILED: nothing told them apart).

-- +goose Up
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN result VARCHAR(10) NULL;
UPDATE JOB_EXECUTION_LOG SET result = CASE WHEN is_success = 1 THEN 'SUCCEEDED' ELSE 'FAILED' END WHERE complete_time IS NOT NULL;

-- +goose Down
ALTER TABLE JOB_EXECUTION_LOG DROP COLUMN result;

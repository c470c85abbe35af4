-- Who or what triggered each execution (issue 42): cron, api:{user},
-- console:{user}, ejctl:{user}, workflow:{flow}/{run}/{node}, retry,
-- failover, daemon. execution_source keeps the original's values
-- (NORMAL_TRIGGER, MISFIRE, FAILOVER); NULL on rows written before.

-- +goose Up
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN triggered_by VARCHAR(255) NULL;

-- +goose Down
ALTER TABLE JOB_EXECUTION_LOG DROP COLUMN triggered_by;

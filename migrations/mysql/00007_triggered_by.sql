-- Who or what triggered each execution (issue 42): cron, api:{user},
-- console:{user}, ejctl:{user}, workflow:{flow}/{run}/{node}, retry,
-- failover, daemon. execution_source keeps the original's values
-- (NORMAL_TRIGGER, MISFIRE, FAILOVER); NULL on rows written before.
-- Guarded like 00006: a run cut off after the ALTER completes at the next start.

-- +goose Up
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `JOB_EXECUTION_LOG` ADD COLUMN `triggered_by` VARCHAR(255) NULL', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'JOB_EXECUTION_LOG' AND column_name = 'triggered_by');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;

-- +goose Down
ALTER TABLE `JOB_EXECUTION_LOG` DROP COLUMN `triggered_by`;

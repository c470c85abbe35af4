-- How each execution ended: SUCCEEDED, FAILED or KILLED (stopped by an operator, by the job's
-- deletion, or by a reschedule), so history tells a killed run from a failed one as the
-- statistics do (KILLED counts as neither). NULL while the execution runs. Rows written before
-- take SUCCEEDED or FAILED from is_success (a killed one stays FAILED: nothing told them apart).
-- Guarded like 00006: a run cut off after the ALTER completes at the next start.

-- +goose Up
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `JOB_EXECUTION_LOG` ADD COLUMN `result` VARCHAR(10) NULL DEFAULT NULL', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'JOB_EXECUTION_LOG' AND column_name = 'result');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
UPDATE `JOB_EXECUTION_LOG` SET `result` = IF(`is_success` = 1, 'SUCCEEDED', 'FAILED') WHERE `complete_time` IS NOT NULL AND `result` IS NULL;

-- +goose Down
ALTER TABLE `JOB_EXECUTION_LOG` DROP COLUMN `result`;

-- JOB_EXECUTION_LOG_JOB_NAME_INDEX (job_name), this project's own index of
-- 00001, is the leading column of JOB_EXECUTION_LOG_JOB_START_INDEX
-- (job_name, start_time): every query it served, that index serves too,
-- and keeping both cost every new execution row one more index insert.
-- A table the original created (adopted by 00001) never had it, and MySQL
-- has no DROP INDEX IF EXISTS: the statement is chosen by what exists.

-- +goose Up
SET @ej_drop = (SELECT IF(COUNT(*) > 0, 'DROP INDEX `JOB_EXECUTION_LOG_JOB_NAME_INDEX` ON `JOB_EXECUTION_LOG`', 'DO 0')
    FROM information_schema.statistics
    WHERE table_schema = DATABASE() AND table_name = 'JOB_EXECUTION_LOG' AND index_name = 'JOB_EXECUTION_LOG_JOB_NAME_INDEX');
PREPARE ej_stmt FROM @ej_drop;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;

-- +goose Down
CREATE INDEX `JOB_EXECUTION_LOG_JOB_NAME_INDEX` ON `JOB_EXECUTION_LOG` (`job_name`);

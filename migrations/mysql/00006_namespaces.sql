-- Namespaces (docs/tenancy.md): every history row belongs to one. Each
-- table gains a namespace column whose default is 'default', so every row
-- written before, by this scheduler or by the original, is the default
-- namespace's, untouched; job_name and workflow_name keep the name as the
-- namespace knows it (task ids carry the namespace already). The
-- statistics are counted per namespace. One index per event table serves
-- a namespace's newest rows.
--
-- MySQL and MariaDB commit every ALTER and CREATE INDEX by itself: a run
-- cut off halfway (a kill, a timeout) leaves some columns added and the
-- version unrecorded. So each statement is chosen by what exists
-- (information_schema), and the next start completes the migration
-- instead of failing on a duplicate column (migrations/resume_test.go).

-- +goose Up
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `JOB_EXECUTION_LOG` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'JOB_EXECUTION_LOG' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `JOB_STATUS_TRACE_LOG` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'JOB_STATUS_TRACE_LOG' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `AUDIT_LOG` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'AUDIT_LOG' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `WORKFLOW_RUN_LOG` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'WORKFLOW_RUN_LOG' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `WORKFLOW_NODE_LOG` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'WORKFLOW_NODE_LOG' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `TASK_RESULT_STATISTICS_MINUTE` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'TASK_RESULT_STATISTICS_MINUTE' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `TASK_RESULT_STATISTICS_HOUR` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'TASK_RESULT_STATISTICS_HOUR' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `TASK_RESULT_STATISTICS_DAY` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'TASK_RESULT_STATISTICS_DAY' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `TASK_RUNNING_STATISTICS` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'TASK_RUNNING_STATISTICS' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `JOB_RUNNING_STATISTICS` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'JOB_RUNNING_STATISTICS' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `JOB_REGISTER_STATISTICS` ADD COLUMN `namespace` VARCHAR(63) NOT NULL DEFAULT ''default''', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'JOB_REGISTER_STATISTICS' AND column_name = 'namespace');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX `JOB_EXECUTION_LOG_NAMESPACE_START_INDEX` ON `JOB_EXECUTION_LOG` (`namespace`, `start_time`)', 'DO 0')
    FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'JOB_EXECUTION_LOG' AND index_name = 'JOB_EXECUTION_LOG_NAMESPACE_START_INDEX');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX `JOB_STATUS_TRACE_LOG_NAMESPACE_CREATION_INDEX` ON `JOB_STATUS_TRACE_LOG` (`namespace`, `creation_time`)', 'DO 0')
    FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'JOB_STATUS_TRACE_LOG' AND index_name = 'JOB_STATUS_TRACE_LOG_NAMESPACE_CREATION_INDEX');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX `AUDIT_LOG_NAMESPACE_TIME_INDEX` ON `AUDIT_LOG` (`namespace`, `creation_time`)', 'DO 0')
    FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'AUDIT_LOG' AND index_name = 'AUDIT_LOG_NAMESPACE_TIME_INDEX');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX `WORKFLOW_RUN_LOG_NAMESPACE_TIME_INDEX` ON `WORKFLOW_RUN_LOG` (`namespace`, `created_time`)', 'DO 0')
    FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'WORKFLOW_RUN_LOG' AND index_name = 'WORKFLOW_RUN_LOG_NAMESPACE_TIME_INDEX');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;

-- +goose Down
DROP INDEX `WORKFLOW_RUN_LOG_NAMESPACE_TIME_INDEX` ON `WORKFLOW_RUN_LOG`;
DROP INDEX `AUDIT_LOG_NAMESPACE_TIME_INDEX` ON `AUDIT_LOG`;
DROP INDEX `JOB_STATUS_TRACE_LOG_NAMESPACE_CREATION_INDEX` ON `JOB_STATUS_TRACE_LOG`;
DROP INDEX `JOB_EXECUTION_LOG_NAMESPACE_START_INDEX` ON `JOB_EXECUTION_LOG`;
ALTER TABLE `JOB_REGISTER_STATISTICS` DROP COLUMN `namespace`;
ALTER TABLE `JOB_RUNNING_STATISTICS` DROP COLUMN `namespace`;
ALTER TABLE `TASK_RUNNING_STATISTICS` DROP COLUMN `namespace`;
ALTER TABLE `TASK_RESULT_STATISTICS_DAY` DROP COLUMN `namespace`;
ALTER TABLE `TASK_RESULT_STATISTICS_HOUR` DROP COLUMN `namespace`;
ALTER TABLE `TASK_RESULT_STATISTICS_MINUTE` DROP COLUMN `namespace`;
ALTER TABLE `WORKFLOW_NODE_LOG` DROP COLUMN `namespace`;
ALTER TABLE `WORKFLOW_RUN_LOG` DROP COLUMN `namespace`;
ALTER TABLE `AUDIT_LOG` DROP COLUMN `namespace`;
ALTER TABLE `JOB_STATUS_TRACE_LOG` DROP COLUMN `namespace`;
ALTER TABLE `JOB_EXECUTION_LOG` DROP COLUMN `namespace`;

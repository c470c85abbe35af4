-- The cron instant each execution serves (the fire it was queued for; a catch-up's or a
-- replayed misfire=true fire's own instant), so history tells which fire ran when; NULL for
-- runs no cron instant queued (API and console triggers, workflows, daemons) and for rows
-- written before. Guarded like 00006: a run cut off after the ALTER completes at the next start.

-- +goose Up
SET @ej_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE `JOB_EXECUTION_LOG` ADD COLUMN `nominal_at` TIMESTAMP(3) NULL DEFAULT NULL', 'DO 0')
    FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'JOB_EXECUTION_LOG' AND column_name = 'nominal_at');
PREPARE ej_stmt FROM @ej_ddl;
EXECUTE ej_stmt;
DEALLOCATE PREPARE ej_stmt;

-- +goose Down
ALTER TABLE `JOB_EXECUTION_LOG` DROP COLUMN `nominal_at`;

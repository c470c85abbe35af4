-- The cron instant each execution serves (the fire it was queued for; a catch-up's or a
-- replayed misfire=true fire's own instant), so history tells which fire ran when; NULL for
-- runs no cron instant queued (API and console triggers, workflows, daemons) and for rows
-- written before.

-- +goose Up
ALTER TABLE JOB_EXECUTION_LOG ADD COLUMN nominal_at TIMESTAMP NULL;

-- +goose Down
ALTER TABLE JOB_EXECUTION_LOG DROP COLUMN nominal_at;

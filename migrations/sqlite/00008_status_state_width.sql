-- A status trace's state as the engine names it: TASK_GONE_BY_OPERATOR has 21 characters,
-- more than the original's VARCHAR(20). SQLite does not bound a VARCHAR's length, so only the
-- MySQL migration of this number changes the table; this one keeps the two lists the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;

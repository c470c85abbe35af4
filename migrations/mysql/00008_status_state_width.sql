-- A status trace's state as the engine names it: TASK_GONE_BY_OPERATOR (a task of an agent
-- the operator marked gone) has 21 characters, which the original's VARCHAR(20) clipped to
-- TASK_GONE_BY_OPERATO. MODIFY is idempotent: a run cut off completes at the next start.

-- +goose Up
ALTER TABLE `JOB_STATUS_TRACE_LOG` MODIFY `state` VARCHAR(32) NOT NULL;

-- +goose Down
ALTER TABLE `JOB_STATUS_TRACE_LOG` MODIFY `state` VARCHAR(20) NOT NULL;

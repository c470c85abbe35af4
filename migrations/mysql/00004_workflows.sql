-- Workflow history: one row per workflow run (WORKFLOW_RUN_LOG, updated as
-- the run moves: state, times, node counts; version is the run's registry
-- version, so a late write of an older state never overwrites a newer one)
-- and one row per node execution that ended (WORKFLOW_NODE_LOG: a node's
-- definition (job, depends_on comma separated, trigger_rule), its attempt,
-- state, times, tasks, outputs as JSON, skip reason or message). Written by the leader's workflow engine through the event
-- trace writer's spool (history/trace), idempotent by id; aged by the
-- same retention as the other history tables. Times are UTC, milliseconds.

-- +goose Up
CREATE TABLE IF NOT EXISTS `WORKFLOW_RUN_LOG` (
    `id` VARCHAR(40) NOT NULL,
    `workflow_name` VARCHAR(100) NOT NULL,
    `run_id` VARCHAR(100) NOT NULL,
    `state` VARCHAR(20) NOT NULL,
    `source` VARCHAR(20) NOT NULL,
    `attempt` INT NOT NULL,
    `created_time` TIMESTAMP(3) NULL DEFAULT NULL,
    `start_time` TIMESTAMP(3) NULL DEFAULT NULL,
    `end_time` TIMESTAMP(3) NULL DEFAULT NULL,
    `reason` VARCHAR(4000) NOT NULL,
    `node_count` INT NOT NULL,
    `succeeded_count` INT NOT NULL,
    `failed_count` INT NOT NULL,
    `skipped_count` INT NOT NULL,
    `version` BIGINT NOT NULL,
    PRIMARY KEY (`id`),
    INDEX `WORKFLOW_RUN_LOG_NAME_TIME_INDEX` (`workflow_name`, `created_time`),
    INDEX `WORKFLOW_RUN_LOG_TIME_INDEX` (`created_time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS `WORKFLOW_NODE_LOG` (
    `id` VARCHAR(40) NOT NULL,
    `workflow_name` VARCHAR(100) NOT NULL,
    `run_id` VARCHAR(100) NOT NULL,
    `node_id` VARCHAR(64) NOT NULL,
    `job_name` VARCHAR(100) NOT NULL,
    `depends_on` TEXT NOT NULL,
    `trigger_rule` VARCHAR(20) NOT NULL,
    `attempt` INT NOT NULL,
    `state` VARCHAR(20) NOT NULL,
    `run_key` VARCHAR(64) NOT NULL,
    `task_ids` TEXT NOT NULL,
    `queued_time` TIMESTAMP(3) NULL DEFAULT NULL,
    `start_time` TIMESTAMP(3) NULL DEFAULT NULL,
    `end_time` TIMESTAMP(3) NULL DEFAULT NULL,
    `skip_reason` VARCHAR(1000) NOT NULL,
    `message` VARCHAR(4000) NOT NULL,
    `outputs` TEXT NOT NULL,
    PRIMARY KEY (`id`),
    INDEX `WORKFLOW_NODE_LOG_RUN_INDEX` (`workflow_name`, `run_id`),
    INDEX `WORKFLOW_NODE_LOG_TIME_INDEX` (`end_time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- +goose Down
DROP TABLE IF EXISTS `WORKFLOW_NODE_LOG`;
DROP TABLE IF EXISTS `WORKFLOW_RUN_LOG`;

-- The audit log (AUDIT_LOG): one row per write request to the REST API,
-- refused ones included: who (user_name, role), from where (address), what
-- (method, route pattern, target_kind and target, a summary without
-- secrets), when (creation_time, UTC, milliseconds) and the HTTP status
-- answered. Written through the event trace writer's spool
-- (history/trace), so rows are idempotent by id; searched by
-- GET /api/audit (history); aged by the same retention as the
-- other history tables.

-- +goose Up
CREATE TABLE IF NOT EXISTS `AUDIT_LOG` (
    `id` VARCHAR(40) NOT NULL,
    `creation_time` TIMESTAMP(3) NULL DEFAULT NULL,
    `user_name` VARCHAR(100) NOT NULL,
    `role` VARCHAR(20) NOT NULL,
    `address` VARCHAR(64) NOT NULL,
    `method` VARCHAR(10) NOT NULL,
    `route` VARCHAR(255) NOT NULL,
    `target_kind` VARCHAR(20) NOT NULL,
    `target` VARCHAR(255) NOT NULL,
    `summary` VARCHAR(2000) NOT NULL,
    `status` INT NOT NULL,
    PRIMARY KEY (`id`),
    INDEX `AUDIT_LOG_CREATION_TIME_INDEX` (`creation_time`),
    INDEX `AUDIT_LOG_USER_TIME_INDEX` (`user_name`, `creation_time`),
    INDEX `AUDIT_LOG_TARGET_TIME_INDEX` (`target`, `creation_time`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- +goose Down
DROP TABLE IF EXISTS `AUDIT_LOG`;

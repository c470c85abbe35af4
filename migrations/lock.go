package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3/lock"
)

// lockName is the MySQL named lock serialising Apply across processes.
const lockName = "elasticjob_trace_migrations"

// lockWaitSeconds bounds how long Apply waits for another process's run.
const lockWaitSeconds = 120

// mysqlLocker serialises migrations with GET_LOCK on goose's connection.
// A named lock belongs to the connection, so the server releases it if
// the process dies mid-run: no stale lock rows, no lease to wait out.
type mysqlLocker struct{}

var _ lock.SessionLocker = mysqlLocker{}

func (mysqlLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", lockName, lockWaitSeconds).Scan(&got); err != nil {
		return fmt.Errorf("migrations: GET_LOCK: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("migrations: another process held %q for %ds", lockName, lockWaitSeconds)
	}
	return nil
}

func (mysqlLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "SELECT RELEASE_LOCK(?)", lockName); err != nil {
		return fmt.Errorf("migrations: RELEASE_LOCK: %w", err)
	}
	return nil
}

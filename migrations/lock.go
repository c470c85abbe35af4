package migrations

import (
	"context"
	"database/sql"
	"fmt"
)

// lockName is the MySQL named lock serialising Apply across processes.
const lockName = "elasticjob_trace_migrations"

// lockWaitSeconds bounds how long Apply waits for another process's run.
const lockWaitSeconds = 120

// lockMySQL takes the named lock on conn. A named lock belongs to its
// connection, so the server releases it if the process dies mid-run: no
// stale lock rows, no lease to wait out.
func lockMySQL(ctx context.Context, conn *sql.Conn) error {
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", lockName, lockWaitSeconds).Scan(&got); err != nil {
		return fmt.Errorf("migrations: GET_LOCK: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("migrations: another process held %q for %ds", lockName, lockWaitSeconds)
	}
	return nil
}

func unlockMySQL(ctx context.Context, conn *sql.Conn) error {
	var released sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", lockName).Scan(&released); err != nil {
		return fmt.Errorf("migrations: RELEASE_LOCK: %w", err)
	}
	return nil
}

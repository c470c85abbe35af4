package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/migrations"
)

// migratedTemplate is a SQLite history database with every migration
// applied, built once per test binary. Applying the migrations to a fresh
// file costs about half a CPU-second under the race detector (goose parses
// each file into a 4 MiB buffer its pool cannot keep under -race, and
// SQLite runs the DDL), and the api tests open some forty databases whose
// schema is only their setup; the migrations themselves are tested in
// package migrations and through the trace writer in history/trace.
var migratedTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "api-migrated-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trace.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	if err := migrations.Apply(context.Background(), db, migrations.SQLite); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// migratedDB writes a fully migrated history database at path, so that
// opening it (trace.Open, migrations.Apply) finds every version applied.
func migratedDB(t testing.TB, path string) {
	t.Helper()
	b, err := migratedTemplate()
	if err != nil {
		t.Fatalf("the migrated history database: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(fmt.Errorf("the migrated history database: %w", err))
	}
}

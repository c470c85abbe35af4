package sqlite

import (
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

func TestIndependent(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  bool
	}{
		{[]string{"/a"}, true},
		{[]string{"/a", "/ab", "/a-b", "/b/c"}, true},
		{[]string{"/a/x", "/a/y"}, true}, // a shared ancestor no op names
		{[]string{"/a", "/a"}, false},
		{[]string{"/a/b/c", "/a"}, false},
		{[]string{"/a", "/a/b"}, false},
		{[]string{"/b", "/"}, false},
	} {
		ops := make([]store.Op, len(c.paths))
		for i, p := range c.paths {
			ops[i] = store.Put(p, nil)
		}
		if got := independent(ops); got != c.want {
			t.Errorf("independent(%v) = %v, want %v", c.paths, got, c.want)
		}
	}
}

// TestWriterPragmas checks that the writer's connection string gives the
// settings asked for (SQLite ignores a misspelt pragma). The writer holds
// its one connection, so a connection opened the same way is checked.
func TestWriterPragmas(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "r.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", s.dsn(writerPragmas("FULL")...))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for pragma, want := range map[string]string{
		"wal_autocheckpoint": strconv.Itoa(writerCheckpointPages),
		"synchronous":        "2", // FULL
		"journal_mode":       "wal",
	} {
		var got string
		if err := db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s on a writer's connection, want %s", pragma, got, want)
		}
	}
}

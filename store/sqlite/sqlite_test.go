package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/sqlite"
	"github.com/ejcloud/elasticjob/store/storetest"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(runChild(path))
	}
	os.Exit(m.Run())
}

func open(t testing.TB, path string, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.KV {
		return open(t, filepath.Join(t.TempDir(), "state.db"), sqlite.Options{})
	})
}

func TestConformanceNoGroupCommit(t *testing.T) {
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		return open(t, filepath.Join(t.TempDir(), "state.db"),
			sqlite.Options{Sync: sqlite.SyncNormal, MaxBatch: 1, WatchQueue: 64})
	}, storetest.Options{ManyChildren: 1000, SlowEvents: 1000})
}

func TestOpenLockedDataDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	first := open(t, path, sqlite.Options{})
	_, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if !errors.Is(err, sqlite.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	want := "data directory " + filepath.Dir(path) + " is in use by another scheduler (pid " +
		strconv.Itoa(os.Getpid()) + ")"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("second Open error %q does not say %q", err, want)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path, sqlite.Options{}) // released by Close
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path, sqlite.Options{})
	if err := s.Commit(t.Context(), store.Create("/config/job/a", []byte("cfg")),
		store.Put("/config/job/a", []byte("cfg2"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, sqlite.Options{})
	n, err := s.Get(t.Context(), "/config/job/a")
	if err != nil || string(n.Value) != "cfg2" || n.Version != 1 {
		t.Fatalf("after reopen Get = %+v, %v", n, err)
	}
}

func TestOpenRejectsURIPath(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db?mode=ro"), sqlite.Options{})
	if err == nil {
		t.Fatal("Open accepted a path with '?'")
	}
}

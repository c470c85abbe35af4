package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

var _ store.KV = (*Store)(nil)

// Sync is the SQLite synchronous setting for the write-ahead log.
type Sync int

const (
	// SyncFull fsyncs the WAL on every transaction: an acknowledged Commit
	// survives kill -9 and OS crash or power loss. The default.
	SyncFull Sync = iota
	// SyncNormal fsyncs only at checkpoints: an acknowledged Commit
	// survives kill -9 of the process but the last transactions may be lost
	// on OS crash or power loss. Faster when there is no group commit.
	SyncNormal
)

// Options tunes Open. The zero value is the recommended configuration.
type Options struct {
	Sync        Sync          // default SyncFull
	BusyTimeout time.Duration // wait on a locked database (default 5s)
	ReadConns   int           // read connections (default 4)
	MaxBatch    int           // Commits grouped into one transaction (default 256; 1 disables)
	WatchQueue  int           // events a watcher may lag before a Resync (default memory.DefaultQueue)
	// OnFull, when set, is called when a commit finds the disk full
	// (SQLITE_FULL); when it answers true (it freed space: the data
	// directory's disk reserve, package diskreserve) the commit is tried
	// once more before it fails.
	OnFull func() bool
}

func (o Options) withDefaults() Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.ReadConns <= 0 {
		o.ReadConns = 4
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	return o
}

// Store is the SQLite-backed store.KV. It owns its database file: Open takes
// an exclusive lock that a second process (or a second Open) cannot get.
type Store struct {
	path   string
	opts   Options
	lock   *os.File
	wdb    *sql.DB // one connection, owned by the writer goroutine
	rdb    *sql.DB // read connections
	reads  readStmts
	hub    *memory.Hub
	reqs   chan *request
	urgent chan *request // the requests of store.Urgent contexts (submit)
	// urgentWaiting counts the urgent requests not yet received by the
	// writer: a chain being applied lets them go between two links.
	urgentWaiting atomic.Int64
	// held are chains the writer received while gathering a group, to be
	// applied next (the writer goroutine's own).
	held []*request
	// afterLink, when set (tests), is called by the writer after each link of
	// a chain is applied, with how many of the chain's links are.
	afterLink func(applied int)
	quit      chan struct{}
	wdone     chan struct{}
	closed    atomic.Bool
	once      sync.Once
}

const schema = `
CREATE TABLE IF NOT EXISTS nodes (
	path    TEXT PRIMARY KEY,
	parent  TEXT NOT NULL,
	value   BLOB,
	version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS nodes_parent ON nodes(parent);`

// Open opens (creating if needed) the store in the SQLite file at path and
// locks "<path>.lock". It fails with an error wrapping ErrLocked when
// another process holds the lock.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite store: open %q: path must be a plain file name", path)
	}
	lock, err := lockDir(path + ".lock")
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, opts: opts.withDefaults(), lock: lock,
		reqs: make(chan *request), urgent: make(chan *request), quit: make(chan struct{}), wdone: make(chan struct{})}
	s.hub = memory.NewHub(s.opts.WatchQueue)
	if err := s.openDBs(ctx); err != nil {
		s.closeDBs()
		_ = unlockDir(lock)
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	w, err := newWriter(ctx, s.wdb)
	if err != nil {
		s.closeDBs()
		_ = unlockDir(lock)
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	go s.writeLoop(w)
	return s, nil
}

func (s *Store) dsn(pragmas ...string) string {
	q := []string{fmt.Sprintf("_pragma=busy_timeout(%d)", s.opts.BusyTimeout.Milliseconds())}
	for _, p := range pragmas {
		q = append(q, "_pragma="+p)
	}
	return s.path + "?" + strings.Join(q, "&")
}

// writerCheckpointPages is how many pages the writer's write-ahead log
// holds before they are copied back into the database (SQLite's default
// is 1,000). A launch round rewrites the same ready, running and waiting
// entries round after round: a longer log copies each such page back once
// for many commits. In BenchmarkCommitRound (100,000 ready entries) the
// default cost 11.3–11.5 µs of CPU per op, 10,000 pages 9.7–10.6;
// BenchmarkCommitScattered went from 2,469–2,742 to 3,005–3,087
// commits/s. (A 32 MiB page cache on top gave 9.2–9.6 µs, but added to an
// RSS already near its 1 GB goal in the simulated cluster: left out.)
// Durability is unchanged: every commit is in the log, fsynced with
// SyncFull, before it is acknowledged.
const writerCheckpointPages = 10_000

func writerPragmas(mode string) []string {
	return []string{"journal_mode(WAL)", "synchronous(" + mode + ")", fmt.Sprintf("wal_autocheckpoint(%d)", writerCheckpointPages)}
}

func (s *Store) openDBs(ctx context.Context) error {
	mode := "FULL"
	if s.opts.Sync == SyncNormal {
		mode = "NORMAL"
	}
	var err error
	if s.wdb, err = sql.Open("sqlite", s.dsn(writerPragmas(mode)...)); err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	if _, err := s.wdb.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if s.rdb, err = sql.Open("sqlite", s.dsn("query_only(1)")); err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(s.opts.ReadConns)
	s.rdb.SetMaxIdleConns(s.opts.ReadConns)
	s.rdb.SetConnMaxLifetime(0)
	return s.reads.prepare(ctx, s.rdb)
}

func (s *Store) closeDBs() {
	s.reads.close()
	for _, db := range []*sql.DB{s.rdb, s.wdb} {
		if db != nil {
			_ = db.Close()
		}
	}
}

// Close stops the writer, ends all watches, closes the database and
// releases the lock. Later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	err := fmt.Errorf("sqlite store: close: %w", store.ErrClosed)
	s.once.Do(func() {
		s.closed.Store(true)
		s.hub.Close()
		close(s.quit)
		<-s.wdone
		s.closeDBs()
		err = unlockDir(s.lock)
	})
	return err
}

func (s *Store) checkOpen(op, path string) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite store: %s %s: %w", op, path, store.ErrClosed)
	}
	return nil
}

// wrapClosed turns a database error seen during Close into ErrClosed.
func (s *Store) wrapClosed(op, path string, err error) error {
	if s.closed.Load() || errors.Is(err, sql.ErrConnDone) {
		return fmt.Errorf("sqlite store: %s %s: %w (%v)", op, path, store.ErrClosed, err)
	}
	return fmt.Errorf("sqlite store: %s %s: %w", op, path, err)
}

package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ejcloud/elasticjob/clock"
)

// Options configure a Writer. Zero values take the defaults shown.
type Options struct {
	Dialect       string        // "sqlite" (default) or "mysql"
	DSN           string        // SQLite: database file path; MySQL: go-sql-driver DSN
	SpoolDir      string        // required: the durable spool (one process per directory)
	BatchSize     int           // events per transaction (500)
	FlushInterval time.Duration // longest wait before a partial batch is written (200ms)
	MaxAge        time.Duration // retention: delete rows older than this (0: keep)
	MaxRows       int64         // retention: keep at most this many rows per table (0: no limit)

	RetentionInterval time.Duration // how often retention runs (5m)
	RetentionBatch    int           // rows per DELETE (1000)
	// RetainIf, if set, gates the scheduled retention passes (only the
	// leader of several scheduler instances runs them).
	RetainIf       func() bool
	MaxMemory      int           // spooled events also kept in memory for the writer (50,000)
	MaxPending     int           // events waiting for the spool before Record drops (200,000)
	SegmentEvents  int           // events per spool segment file (10,000)
	WriteTimeout   time.Duration // bound on one batch transaction or connect attempt (10s)
	ConnectTimeout time.Duration // bound on Open's first connection attempt (3s)
	RetryMin       time.Duration // first reconnect delay after a failure (1s)
	RetryMax       time.Duration // longest reconnect delay (30s)

	// Sink, when set, takes the batches the loop would write to the
	// database: the replicated history's publisher (package
	// history/replog). The database is still opened, migrated and read;
	// rows reach it through Apply, in the replicated log's order.
	Sink Sink

	Clock clock.Clock
	Log   *slog.Logger
}

// Sink takes batches of spooled events instead of the database. An
// error leaves them spooled, retried as a database error is; a batch
// may be published more than once (rows are idempotent by ID).
type Sink interface {
	Publish(ctx context.Context, evs []Event) error
}

func (o *Options) defaults() error {
	if o.Dialect == "" {
		o.Dialect = dialectSQLite
	}
	if o.Dialect != dialectSQLite && o.Dialect != dialectMySQL {
		return fmt.Errorf("trace: dialect %q, want %q or %q", o.Dialect, dialectSQLite, dialectMySQL)
	}
	if o.DSN == "" {
		return errors.New("trace: DSN is required")
	}
	if o.SpoolDir == "" {
		return errors.New("trace: SpoolDir is required")
	}
	if o.MaxAge < 0 || o.MaxRows < 0 {
		return errors.New("trace: MaxAge and MaxRows must not be negative")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt(&o.BatchSize, 500)
	def(&o.FlushInterval, 200*time.Millisecond)
	def(&o.RetentionInterval, 5*time.Minute)
	defInt(&o.RetentionBatch, 1000)
	defInt(&o.MaxMemory, 50_000)
	defInt(&o.MaxPending, 200_000)
	defInt(&o.SegmentEvents, 10_000)
	def(&o.WriteTimeout, 10*time.Second)
	def(&o.ConnectTimeout, 3*time.Second)
	def(&o.RetryMin, time.Second)
	def(&o.RetryMax, 30*time.Second)
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// ErrUnavailable is returned while the history database cannot be used.
var ErrUnavailable = errors.New("trace: history database unavailable")

// ErrClosed is returned by Flush and Sync after Close.
var ErrClosed = errors.New("trace: writer closed")

// Writer records events into the history database: Record never blocks,
// every event is spooled to disk (fsync, in groups) and then written in
// batches, one transaction each; while the database is down the spool
// grows and is written when it returns, also after a restart.
type Writer struct {
	opt   Options
	log   *slog.Logger
	db    *sqlx.DB
	sql   *sqlWriter
	spool *spool
	lines lines // the journal's encoding buffer (spoolEvents)
	m     *metrics
	ready atomic.Bool // schema applied: DB() may be used

	// Record → journal.
	mu        sync.Mutex
	pending   []Event
	recorded  uint64 // events accepted by Record
	journaled uint64 // of those, spooled (or handed on after a spool failure)
	progress  chan struct{}
	closing   bool
	droppedAt time.Time // last "dropped" log line
	drops     uint64    // events Record dropped, ever (Dropped)

	// journal → database loop (guarded by mu).
	chunks   []*chunk
	inMemory int // events held in chunks' memory
	depth    int // events in chunks: spooled, not yet in the database

	wake     chan struct{} // pending not empty
	data     chan struct{} // chunks appended
	flushReq chan flushReq
	quit     chan struct{} // closed by Close: the loop exits
	stop     chan struct{} // closed by Close: the journal drains and exits
	loopCtx  context.Context
	cancel   context.CancelFunc // aborts the loop's database work (Close)
	jDone    chan struct{}
	dDone    chan struct{}
	closed   atomic.Bool

	retentionHook func()      // tests: called after each scheduled retention pass
	afterCommit   func(n int) // tests: called after each batch is committed
}

// chunk is a run of spooled events, in order.
type chunk struct {
	seq      uint64  // segment (0: not spooled, memory only, after a spool failure)
	start, n int     // lines [start, start+n) of the segment
	events   []Event // nil when only on disk
	seal     bool    // marker: segment seq is complete, delete it when reached
	busy     bool    // the database loop is working on it
}

type flushReq struct {
	done chan error
}

// Open starts a writer. It returns an error only for bad options or an
// unusable spool directory: when the database is down, events spool and
// the schema is applied once it is back.
func Open(ctx context.Context, opt Options) (*Writer, error) {
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	sp, segs, err := openSpool(opt.SpoolDir, opt.SegmentEvents)
	if err != nil {
		return nil, err
	}
	db, err := openDB(opt.Dialect, opt.DSN)
	if err != nil {
		sp.close()
		return nil, err
	}
	w := &Writer{
		opt: opt, log: opt.Log, db: db, sql: newSQLWriter(db, opt.Dialect, opt.BatchSize), spool: sp, m: newMetrics(),
		progress: make(chan struct{}), wake: make(chan struct{}, 1), data: make(chan struct{}, 1),
		flushReq: make(chan flushReq), stop: make(chan struct{}), quit: make(chan struct{}), jDone: make(chan struct{}), dDone: make(chan struct{}),
	}
	w.loopCtx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	backlog := 0
	for _, s := range segs {
		w.chunks = append(w.chunks, &chunk{seq: s.seq, n: s.lines}, &chunk{seq: s.seq, seal: true})
		backlog += s.lines
	}
	w.depth = backlog
	w.m.spooled.Set(float64(backlog))
	if backlog > 0 {
		w.log.Info("trace: replaying spooled events", "events", backlog, "segments", len(segs))
	}
	cctx, cancel := context.WithTimeout(ctx, opt.ConnectTimeout)
	err = w.connect(cctx)
	cancel()
	if err != nil {
		w.log.Warn("trace: history database unavailable; spooling events until it is back", "err", err)
	}
	go w.journal()
	go w.loop(err != nil)
	return w, nil
}

// connect pings the database and applies the migrations.
func (w *Writer) connect(ctx context.Context) error {
	if err := w.sql.connect(ctx); err != nil {
		w.m.dbUp.Set(0)
		return err
	}
	w.ready.Store(true)
	w.m.dbUp.Set(1)
	return nil
}

// DB is the history database for queries, or nil when w is nil or its
// schema has not been applied yet (the database was down since start).
func (w *Writer) DB() *sqlx.DB {
	if w == nil || !w.ready.Load() {
		return nil
	}
	return w.db
}

// QueryDB is DB with the unavailability as ErrUnavailable.
func (w *Writer) QueryDB() (*sqlx.DB, error) {
	if db := w.DB(); db != nil {
		return db, nil
	}
	return nil, ErrUnavailable
}

// Dialect is "sqlite" or "mysql".
func (w *Writer) Dialect() string { return w.opt.Dialect }

// Record queues an event. It never blocks on I/O: the event is spooled by
// a background goroutine. Only if more than MaxPending events wait for the
// disk (a stalled disk) are events dropped, counted and logged.
func (w *Writer) Record(ev Event) {
	if w != nil && ev != nil {
		w.record(ev)
	}
}

// ErrDropped is returned by RecordDurable when the event could not even be
// queued (the writer is closing, or MaxPending events wait for the disk).
var ErrDropped = errors.New("trace: event dropped")

// RecordDurable records an event and waits, within ctx, until it is
// durable in the spool (Sync). It never waits for the database.
func (w *Writer) RecordDurable(ctx context.Context, ev Event) error {
	if w == nil || ev == nil {
		return ErrClosed
	}
	if !w.record(ev) {
		return ErrDropped
	}
	return w.Sync(ctx)
}

func (w *Writer) record(ev Event) bool {
	ev = ev.normalize(w.opt.Clock.Now())
	w.mu.Lock()
	if w.closing || len(w.pending) >= w.opt.MaxPending {
		w.dropLocked()
		w.mu.Unlock()
		return false
	}
	w.pending = append(w.pending, ev)
	w.recorded++
	w.m.pending.Set(float64(len(w.pending)))
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

func (w *Writer) dropLocked() {
	w.drops++
	w.m.dropped.Inc()
	if now := w.opt.Clock.Now(); now.Sub(w.droppedAt) >= time.Minute {
		w.droppedAt = now
		w.log.Error("trace: event dropped", "closing", w.closing, "pending", len(w.pending))
	}
}

// Dropped is how many events Record has dropped since Open (the writer
// closing, or MaxPending events waiting for a stalled disk): a caller that
// must know its events are durable compares it before and after (Observer.Sync).
func (w *Writer) Dropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.drops
}

// Sync waits until every event recorded before the call is durable in
// the spool. (Events Record dropped are not waited for: see Dropped.)
func (w *Writer) Sync(ctx context.Context) error {
	w.mu.Lock()
	target := w.recorded
	w.mu.Unlock()
	for {
		w.mu.Lock()
		done, ch := w.journaled >= target, w.progress
		w.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-w.jDone:
			w.mu.Lock()
			done := w.journaled >= target
			w.mu.Unlock()
			if done {
				return nil
			}
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Flush writes every event recorded before the call to the database now,
// reconnecting at once if it was down. It returns the database error when
// it could not; the events stay spooled.
func (w *Writer) Flush(ctx context.Context) error {
	if err := w.Sync(ctx); err != nil {
		return err
	}
	req := flushReq{done: make(chan error, 1)}
	select {
	case w.flushReq <- req:
	case <-w.dDone:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the writer: pending events are spooled, then what the
// database takes before ctx ends is written; the rest stays in the spool
// for the next Open.
func (w *Writer) Close(ctx context.Context) error {
	if w == nil || w.closed.Swap(true) {
		return nil
	}
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	close(w.stop)
	<-w.jDone
	err := w.Flush(ctx)
	if err != nil && !errors.Is(err, ErrClosed) {
		w.log.Warn("trace: closing with events still spooled", "events", w.Depth(), "err", err)
	}
	w.cancel()
	close(w.quit)
	<-w.dDone
	w.mu.Lock()
	empty := len(w.chunks) == 0
	w.mu.Unlock()
	w.spool.closeCurrent(empty)
	w.spool.close()
	return w.db.Close()
}

// Depth is the number of spooled events not yet in the database.
func (w *Writer) Depth() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.depth
}

// TimeArg is how a time must be bound in queries on this database to
// compare with stored times (UTC text on SQLite, UTC time on MySQL).
func (w *Writer) TimeArg(t time.Time) any { return timeArg(w.opt.Dialect, t) }

// Handle is the database handle whether or not the database is reachable
// yet: queries through it fail while it is down (the history API reports
// the error) and work once it is back. nil when w is nil.
func (w *Writer) Handle() *sqlx.DB {
	if w == nil {
		return nil
	}
	return w.db
}

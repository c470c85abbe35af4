package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// request is one Commit, or one CommitChain, waiting for the writer
// goroutine.
type request struct {
	ctx    context.Context
	ops    []store.Op
	done   chan error    // buffered: the writer never blocks on a reply
	events []store.Event // what the commit wrote, set before done is answered
	urgent bool          // store.Urgent: on the urgent lane (submit)
	// chain: a CommitChain of links (chain.go); linked holds the events
	// of each link applied so far, set before done is answered.
	chain  bool
	links  [][]store.Op
	linked [][]store.Event
}

var _ store.Reporter = (*Store)(nil)

// Commit applies ops atomically in one SQLite transaction (BEGIN
// IMMEDIATE). Concurrent Commits are grouped into one transaction, each
// keeping its all-or-nothing semantics (applyBatch), and the group costs one
// fsync. It returns once the transaction is durable.
func (s *Store) Commit(ctx context.Context, ops ...store.Op) error {
	_, err := s.CommitReport(ctx, ops...)
	return err
}

// CommitReport is Commit, returning the events the commit produced
// (store.Reporter).
func (s *Store) CommitReport(ctx context.Context, ops ...store.Op) ([]store.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: commit: %w", err)
	}
	if err := memory.CheckOps(ops); err != nil {
		return nil, fmt.Errorf("sqlite store: commit: %w", err)
	}
	if err := s.checkOpen("commit", ""); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	req := &request{ctx: ctx, ops: ops, done: make(chan error, 1), urgent: store.IsUrgent(ctx)}
	if err := s.submit(req); err != nil {
		return nil, fmt.Errorf("sqlite store: commit: %w", err)
	}
	// The writer has the request and always answers it.
	if err := <-req.done; err != nil {
		return nil, fmt.Errorf("sqlite store: commit: %w", err)
	}
	return req.events, nil
}

// submit hands req to the writer goroutine: an urgent one (store.Urgent:
// the producer's fire commits, the API's writes) on a lane of its own,
// counted while it waits, so that the writer takes it before the others
// and a chain being applied lets it go between two links (chain.go).
func (s *Store) submit(req *request) error {
	lane := s.reqs
	if req.urgent {
		lane = s.urgent
		s.urgentWaiting.Add(1) // taken back by the writer as it receives req, or below
	}
	select {
	case lane <- req:
		return nil
	case <-s.quit:
		if req.urgent {
			s.urgentWaiting.Add(-1)
		}
		return store.ErrClosed
	case <-req.ctx.Done():
		if req.urgent {
			s.urgentWaiting.Add(-1)
		}
		return req.ctx.Err()
	}
}

// writeLoop owns the write connection. Requests that arrive while a
// transaction is being committed queue up and form the next group, the
// urgent ones first; a chain is applied on its own (commitChain).
func (s *Store) writeLoop(w *writer) {
	defer close(s.wdone)
	defer w.close()
	for {
		first := s.next()
		if first == nil {
			return
		}
		if first.chain {
			s.commitChain(w, first)
			continue
		}
		s.commitGroup(w, s.gather([]*request{first}, true))
	}
}

// next waits for the writer's next request: an urgent one if one waits,
// else a chain held back by gather, else whichever comes first; nil once
// the store closes.
func (s *Store) next() *request {
	select {
	case r := <-s.urgent:
		s.urgentWaiting.Add(-1)
		return r
	default:
	}
	if len(s.held) > 0 {
		r := s.held[0]
		s.held = s.held[1:]
		return r
	}
	select {
	case r := <-s.urgent:
		s.urgentWaiting.Add(-1)
		return r
	case r := <-s.reqs:
		return r
	case <-s.quit:
		return nil
	}
}

// gather adds the requests waiting now to group, up to MaxBatch: the
// urgent ones first, then, with all, the others. A chain met on the way
// is held back to be applied on its own after the group (next).
func (s *Store) gather(group []*request, all bool) []*request {
	for len(group) < s.opts.MaxBatch {
		var r *request
		select {
		case r = <-s.urgent:
			s.urgentWaiting.Add(-1)
		default:
			if !all {
				return group
			}
			select {
			case r = <-s.urgent:
				s.urgentWaiting.Add(-1)
			case r = <-s.reqs:
			default:
				return group
			}
		}
		if r.chain {
			s.held = append(s.held, r)
			continue
		}
		group = append(group, r)
	}
	return group
}

// commitGroup runs a group of requests in one transaction. A request whose
// ops fail leaves nothing written and is answered with that error; the
// others commit together. Events are published in commit order before the
// replies, so a caller's own watch has them queued when Commit returns. A
// group that finds the disk full is tried once more when Options.OnFull
// frees space.
func (s *Store) commitGroup(w *writer, group []*request) {
	errs, events, err := s.tryGroup(w, group)
	if err != nil && isFull(err) && s.opts.OnFull != nil && s.opts.OnFull() {
		errs, events, err = s.tryGroup(w, group)
	}
	if err != nil {
		for _, r := range group {
			r.done <- err
		}
		return
	}
	s.hub.Publish(events)
	for i, r := range group {
		r.done <- errs[i]
	}
}

// tryGroup runs the group's transaction: each request's own error and the
// events, or the error that failed the whole group (rolled back).
func (s *Store) tryGroup(w *writer, group []*request) ([]error, []store.Event, error) {
	errs := make([]error, len(group))
	var events []store.Event
	fail := func(err error) ([]error, []store.Event, error) {
		_ = w.exec("ROLLBACK")
		return nil, nil, err
	}
	if err := w.exec("BEGIN IMMEDIATE"); err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	for i, r := range group {
		r.events = nil
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		evs, opErr, dbErr := w.applyBatch(r.ops)
		if dbErr != nil { // the transaction may be gone: fail the group
			return fail(dbErr)
		}
		errs[i] = opErr
		r.events = evs
		events = append(events, evs...)
	}
	if err := w.exec("COMMIT"); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return errs, events, nil
}

// isFull reports whether err is SQLite's "database or disk is full".
func isFull(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		return coded.Code()&0xff == sqlite3.SQLITE_FULL
	}
	return strings.Contains(err.Error(), "disk is full")
}

// writer holds the write connection and its prepared statements.
type writer struct {
	conn                                   *sql.Conn
	version, insert, ancestor, update, del *sql.Stmt
	descendants, versionsIn                *sql.Stmt

	// versions' scratch: a chunk's index by path, its query's arguments
	// and the path of the row being scanned.
	at   map[string]int
	args []any
	path sql.RawBytes
}

func newWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn}
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = conn.PrepareContext(ctx, q)
		return st
	}
	w.version = prep(`SELECT version FROM nodes WHERE path = ?`)
	w.insert = prep(`INSERT INTO nodes (path, parent, value, version) VALUES (?, ?, ?, 0)`)
	w.ancestor = prep(`INSERT INTO nodes (path, parent, value, version) VALUES (?, ?, NULL, 0)
		ON CONFLICT (path) DO NOTHING`)
	w.update = prep(`UPDATE nodes SET value = ?, version = ? WHERE path = ?`)
	w.descendants = prep(`SELECT path, version FROM nodes WHERE path >= ? AND path < ? ORDER BY path DESC`)
	w.versionsIn = prep(`SELECT path, version FROM nodes WHERE path IN (?` +
		strings.Repeat(", ?", versionsPerQuery-1) + `)`)
	w.del = prep(`DELETE FROM nodes WHERE path = ? OR (path >= ? AND path < ?)`)
	if err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *writer) exec(q string) error {
	_, err := w.conn.ExecContext(context.Background(), q)
	return err
}

func (w *writer) close() {
	for _, st := range []*sql.Stmt{w.version, w.insert, w.ancestor, w.update, w.del, w.descendants, w.versionsIn} {
		if st != nil {
			_ = st.Close()
		}
	}
	_ = w.conn.Close()
}

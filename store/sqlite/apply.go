package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// dbError marks a database failure (as opposed to an op's store error).
type dbError struct{ err error }

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }

// applyBatch applies one Commit's ops. On an op error (ErrExists,
// ErrNotFound, ErrConflict) nothing of the batch stays written and that
// error is returned as opErr; a database failure is returned as dbErr and
// leaves the transaction to the caller.
//
// Ops on independent paths (applyChecked) are all checked before any is
// written. Others, whose checks depend on what earlier ops of the batch
// write, run inside a SAVEPOINT of the open transaction and roll back to it
// on an op error.
func (w *writer) applyBatch(ops []store.Op) (events []store.Event, opErr, dbErr error) {
	if independent(ops) {
		return w.applyChecked(ops)
	}
	if err := w.exec("SAVEPOINT batch"); err != nil {
		return nil, nil, err
	}
	for _, op := range ops {
		evs, err := w.apply(op)
		var de dbError
		if errors.As(err, &de) {
			return nil, nil, de.err
		}
		if err != nil {
			if err := w.exec("ROLLBACK TO batch"); err != nil {
				return nil, nil, err
			}
			return nil, err, w.exec("RELEASE batch")
		}
		events = append(events, evs...)
	}
	return events, nil, w.exec("RELEASE batch")
}

// independent reports whether no op's path is another's, or an ancestor of
// another's: then no op changes what another finds (a create's missing
// ancestors, which two ops may share, are created by whichever comes first,
// as they would be one after the other).
func independent(ops []store.Op) bool {
	if len(ops) == 1 {
		return true
	}
	paths := make(map[string]struct{}, len(ops))
	for _, op := range ops {
		if _, dup := paths[op.Path]; dup {
			return false
		}
		paths[op.Path] = struct{}{}
	}
	for _, op := range ops {
		for a := op.Path; a != "/"; {
			a = store.Parent(a)
			if _, ok := paths[a]; ok {
				return false
			}
		}
	}
	return true
}

// applyChecked applies ops on independent paths: every op is checked
// against the store first and written only when all pass, so an op error
// leaves nothing to undo. That spares the batch a SAVEPOINT, whose
// statement journal copies every page the batch changes (to a temporary
// file past 64 KiB, a write system call per page) for a rollback that
// almost never comes: 1.8 % of the scheduler's CPU in the simulated
// cluster, where a launch round's commit changes thousands of pages.
func (w *writer) applyChecked(ops []store.Op) (events []store.Event, opErr, dbErr error) {
	states, err := w.versions(ops)
	if err != nil {
		return nil, nil, dbErrOf(err)
	}
	for i, op := range ops {
		if err := check(op, states[i].cur, states[i].exists); err != nil {
			return nil, err, nil
		}
	}
	for i, op := range ops {
		evs, err := w.perform(op, states[i].cur, states[i].exists)
		if err != nil {
			return nil, nil, dbErrOf(err)
		}
		events = append(events, evs...)
	}
	return events, nil, nil
}

// dbErrOf is the database error err wraps (perform and current return
// nothing else).
func dbErrOf(err error) error {
	var de dbError
	if errors.As(err, &de) {
		return de.err
	}
	return err
}

func (w *writer) apply(op store.Op) ([]store.Event, error) {
	cur, exists, err := w.current(op.Path)
	if err != nil {
		return nil, err
	}
	if err := check(op, cur, exists); err != nil {
		return nil, err
	}
	return w.perform(op, cur, exists)
}

// check is op's condition on its path's version (cur) and existence: the
// op error it fails with, if any.
func check(op store.Op, cur int64, exists bool) error {
	switch op.Kind {
	case store.OpCreate:
		if exists {
			return memory.OpError(op, store.ErrExists)
		}
		return nil
	case store.OpPut:
		return nil
	case store.OpDelete:
		if !exists && op.Version == store.AnyVersion {
			return nil
		}
		return match(op, cur, exists)
	default: // OpSet, OpCheck; CheckOps rejected unknown kinds
		return match(op, cur, exists)
	}
}

// perform writes what op does, once check passed; any error is a dbError.
func (w *writer) perform(op store.Op, cur int64, exists bool) ([]store.Event, error) {
	switch op.Kind {
	case store.OpCreate:
		return w.create(op)
	case store.OpPut:
		if !exists {
			return w.create(op)
		}
		return w.write(op, cur+1)
	case store.OpSet:
		return w.write(op, cur+1)
	case store.OpDelete:
		if !exists {
			return nil, nil
		}
		return w.deleteTree(op.Path, cur)
	default: // OpCheck
		return nil, nil
	}
}

func match(op store.Op, cur int64, exists bool) error {
	if !exists {
		return memory.OpError(op, store.ErrNotFound)
	}
	if op.Version != store.AnyVersion && op.Version != cur {
		return memory.OpError(op, store.ErrConflict)
	}
	return nil
}

// nodeState is a path's version and whether it exists.
type nodeState struct {
	cur    int64
	exists bool
}

// versionsPerQuery is how many paths one query of versions looks up (the
// writer's versionsIn statement has as many parameters).
const versionsPerQuery = 64

// versions returns the state of each op's path. The paths are looked up
// versionsPerQuery at a time, in one query each: a launch round's commit
// has hundreds of ops, and a query per path cost database/sql and the
// driver more than SQLite's own seek (3.7 % of the scheduler's CPU and a
// twentieth of all it allocated in the simulated cluster). The paths of
// ops must be distinct, as applyChecked's are.
func (w *writer) versions(ops []store.Op) ([]nodeState, error) {
	states := make([]nodeState, len(ops))
	if len(ops) < versionsPerQuery/4 {
		for i, op := range ops {
			cur, exists, err := w.current(op.Path)
			if err != nil {
				return nil, err
			}
			states[i] = nodeState{cur, exists}
		}
		return states, nil
	}
	if w.at == nil {
		w.at = make(map[string]int, versionsPerQuery)
		w.args = make([]any, versionsPerQuery)
	}
	for lo := 0; lo < len(ops); lo += versionsPerQuery {
		chunk := ops[lo:min(len(ops), lo+versionsPerQuery)]
		clear(w.at)
		n := 0
		for i, op := range chunk {
			if op.Path == "/" {
				states[lo+i] = nodeState{0, true}
				continue
			}
			w.at[op.Path] = lo + i
			w.args[n] = op.Path
			n++
		}
		if n == 0 {
			continue
		}
		for i := n; i < versionsPerQuery; i++ {
			w.args[i] = w.args[0] // IN ignores the repeats
		}
		if err := w.scanVersions(states); err != nil {
			return nil, err
		}
	}
	return states, nil
}

// scanVersions runs versionsIn over w.args and records each row's version
// in states at the index w.at gives its path.
func (w *writer) scanVersions(states []nodeState) error {
	rows, err := w.versionsIn.QueryContext(context.Background(), w.args...)
	if err != nil {
		return dbError{err}
	}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&w.path, &v); err != nil {
			rows.Close()
			return dbError{err}
		}
		if i, ok := w.at[string(w.path)]; ok {
			states[i] = nodeState{v, true}
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return dbError{err}
	}
	return nil
}

// current returns the version of path and whether it exists.
func (w *writer) current(path string) (int64, bool, error) {
	if path == "/" {
		return 0, true, nil
	}
	var v int64
	err := w.version.QueryRowContext(context.Background(), path).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, dbError{err}
	}
	return v, true, nil
}

// create inserts op.Path at version 0 after its missing ancestors.
func (w *writer) create(op store.Op) ([]store.Event, error) {
	ctx := context.Background()
	var created []string
	for a := store.Parent(op.Path); a != "/"; a = store.Parent(a) {
		res, err := w.ancestor.ExecContext(ctx, a, store.Parent(a))
		if err != nil {
			return nil, dbError{err}
		}
		if n, _ := res.RowsAffected(); n == 0 {
			break // it exists, so do all of its ancestors
		}
		created = append(created, a)
	}
	if _, err := w.insert.ExecContext(ctx, op.Path, store.Parent(op.Path), value(op.Value)); err != nil {
		return nil, dbError{err}
	}
	events := make([]store.Event, 0, len(created)+1)
	for _, a := range slices.Backward(created) {
		events = append(events, store.Event{Type: store.EventPut, Path: a})
	}
	return append(events, store.Event{Type: store.EventPut, Path: op.Path}), nil
}

func (w *writer) write(op store.Op, version int64) ([]store.Event, error) {
	if _, err := w.update.ExecContext(context.Background(), value(op.Value), version, op.Path); err != nil {
		return nil, dbError{err}
	}
	return []store.Event{{Type: store.EventPut, Path: op.Path, Version: version}}, nil
}

// deleteTree removes path and its descendants, found by the key range
// [path+"/", path+"0") ('0' follows '/'), which needs no LIKE escaping.
// Events list descendants in descending path order, then path itself, so
// every node comes after its descendants. cur is path's version.
func (w *writer) deleteTree(path string, cur int64) ([]store.Event, error) {
	ctx := context.Background()
	lo, hi := path+"/", path+"0"
	rows, err := w.descendants.QueryContext(ctx, lo, hi)
	if err != nil {
		return nil, dbError{err}
	}
	var events []store.Event
	for rows.Next() {
		ev := store.Event{Type: store.EventDelete}
		if err := rows.Scan(&ev.Path, &ev.Version); err != nil {
			rows.Close()
			return nil, dbError{err}
		}
		events = append(events, ev)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, dbError{err}
	}
	if _, err := w.del.ExecContext(ctx, path, lo, hi); err != nil {
		return nil, dbError{err}
	}
	return append(events, store.Event{Type: store.EventDelete, Path: path, Version: cur}), nil
}

// value stores nil as NULL and anything else as a BLOB.
func value(v []byte) any {
	if v == nil {
		return nil
	}
	return v
}

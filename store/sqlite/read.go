package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/store"
)

// readStmts are prepared on the read pool; each runs as one implicit
// transaction on a WAL snapshot, so reads never wait for the writer.
type readStmts struct {
	get, children, list *sql.Stmt
}

func (r *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = db.PrepareContext(ctx, q)
		return st
	}
	r.get = prep(`SELECT value, version FROM nodes WHERE path = ?`)
	r.children = prep(`SELECT path FROM nodes WHERE parent = ? ORDER BY path`)
	r.list = prep(`SELECT path, value, version FROM nodes WHERE parent = ? ORDER BY path`)
	return err
}

func (r *readStmts) close() {
	for _, st := range []*sql.Stmt{r.get, r.children, r.list} {
		if st != nil {
			_ = st.Close()
		}
	}
}

func (s *Store) readable(op, path string) error {
	if err := store.ValidatePath(path); err != nil {
		return fmt.Errorf("sqlite store: %s: %w", op, err)
	}
	return s.checkOpen(op, path)
}

// Get returns the node at path. The root "/" always exists (version 0).
func (s *Store) Get(ctx context.Context, path string) (store.Node, error) {
	if err := s.readable("get", path); err != nil {
		return store.Node{}, err
	}
	if path == "/" {
		return store.Node{Path: "/"}, nil
	}
	n := store.Node{Path: path}
	err := s.reads.get.QueryRowContext(ctx, path).Scan(&n.Value, &n.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Node{}, fmt.Errorf("sqlite store: get %s: %w", path, store.ErrNotFound)
	}
	if err != nil {
		return store.Node{}, s.wrapClosed("get", path, err)
	}
	return n, nil
}

// Children returns the sorted names of path's direct children.
func (s *Store) Children(ctx context.Context, path string) ([]string, error) {
	if err := s.readable("children", path); err != nil {
		return nil, err
	}
	rows, err := s.reads.children.QueryContext(ctx, path)
	if err != nil {
		return nil, s.wrapClosed("children", path, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, s.wrapClosed("children", path, err)
		}
		names = append(names, store.Base(p))
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapClosed("children", path, err)
	}
	return names, nil
}

// List returns path's direct children with their values, sorted by path.
func (s *Store) List(ctx context.Context, path string) ([]store.Node, error) {
	if err := s.readable("list", path); err != nil {
		return nil, err
	}
	rows, err := s.reads.list.QueryContext(ctx, path)
	if err != nil {
		return nil, s.wrapClosed("list", path, err)
	}
	defer rows.Close()
	var nodes []store.Node
	for rows.Next() {
		var n store.Node
		if err := rows.Scan(&n.Path, &n.Value, &n.Version); err != nil {
			return nil, s.wrapClosed("list", path, err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapClosed("list", path, err)
	}
	return nodes, nil
}

// Watch reports changes of path and its descendants made through this
// Store, in commit order, until ctx is done or the Store is closed. The
// database file is owned by one process (see Open), so this process's
// commits are all the changes there are.
func (s *Store) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	if err := s.readable("watch", path); err != nil {
		return nil, err
	}
	ch, err := s.hub.Watch(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: watch %s: %w", path, err)
	}
	return ch, nil
}

package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ejcloud/elasticjob/store"
)

var (
	_ store.KV         = (*Store)(nil)
	_ store.Revisioned = (*Store)(nil)
)

// Store is an in-memory store.KV. The zero value is not usable; call New.
type Store struct {
	mu     sync.RWMutex
	nodes  map[string]node
	kids   map[string]map[string]struct{} // parent path -> child names
	hub    *Hub
	closed bool
	rev    int64 // the revision: commits that wrote something
}

type node struct {
	value   []byte
	version int64
}

// New returns an empty store.
func New() *Store {
	return &Store{
		nodes: map[string]node{},
		kids:  map[string]map[string]struct{}{},
		hub:   NewHub(DefaultQueue),
	}
}

// Get returns the node at path. The root "/" always exists (version 0).
func (s *Store) Get(ctx context.Context, path string) (store.Node, error) {
	if err := s.readable(ctx, "get", path); err != nil {
		return store.Node{}, err
	}
	defer s.mu.RUnlock()
	if path == "/" {
		return store.Node{Path: "/"}, nil
	}
	n, ok := s.nodes[path]
	if !ok {
		return store.Node{}, fmt.Errorf("memory: get %s: %w", path, store.ErrNotFound)
	}
	return store.Node{Path: path, Value: clone(n.value), Version: n.version}, nil
}

// Children returns the sorted names of path's direct children.
func (s *Store) Children(ctx context.Context, path string) ([]string, error) {
	if err := s.readable(ctx, "children", path); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	return s.childNames(path), nil
}

// List returns path's direct children with their values, sorted by path.
func (s *Store) List(ctx context.Context, path string) ([]store.Node, error) {
	if err := s.readable(ctx, "list", path); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	names := s.childNames(path)
	if names == nil {
		return nil, nil
	}
	out := make([]store.Node, len(names))
	for i, name := range names {
		p := store.Join(path, name)
		n := s.nodes[p]
		out[i] = store.Node{Path: p, Value: clone(n.value), Version: n.version}
	}
	return out, nil
}

// Commit applies ops atomically: on the first failing op every earlier op
// of the batch is undone and that op's error is returned.
func (s *Store) Commit(ctx context.Context, ops ...store.Op) error {
	_, err := s.CommitAt(ctx, ops...)
	return err
}

// CommitAt is Commit with the revision the commit left (store.Revisioned):
// every commit that writes something is one revision, and its events
// carry it and the values written.
func (s *Store) CommitAt(ctx context.Context, ops ...store.Op) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: commit: %w", err)
	}
	if err := CheckOps(ops); err != nil {
		return 0, fmt.Errorf("memory: commit: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("memory: commit: %w", store.ErrClosed)
	}
	tx := &txn{s: s, saved: map[string]*node{}}
	for _, op := range ops {
		if err := tx.apply(op); err != nil {
			tx.rollback()
			return 0, fmt.Errorf("memory: commit: %w", err)
		}
	}
	if len(tx.events) > 0 {
		s.rev++
		for i := range tx.events {
			tx.events[i].HasValue, tx.events[i].Revision = true, s.rev
		}
	}
	s.hub.Publish(tx.events)
	return s.rev, nil
}

// GetAt is Get with the revision it read at (store.Revisioned).
func (s *Store) GetAt(ctx context.Context, path string) (store.Node, int64, error) {
	if err := s.readable(ctx, "get", path); err != nil {
		return store.Node{}, 0, err
	}
	defer s.mu.RUnlock()
	if path == "/" {
		return store.Node{Path: "/"}, s.rev, nil
	}
	n, ok := s.nodes[path]
	if !ok {
		return store.Node{}, s.rev, fmt.Errorf("memory: get %s: %w", path, store.ErrNotFound)
	}
	return store.Node{Path: path, Value: clone(n.value), Version: n.version}, s.rev, nil
}

// Revision is the store's current revision (store.Revisioned).
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.readable(ctx, "revision", "/"); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	return s.rev, nil
}

// Watch reports changes of path and its descendants until ctx is done.
func (s *Store) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	if err := s.readable(ctx, "watch", path); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	ch, err := s.hub.Watch(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("memory: watch %s: %w", path, err)
	}
	return ch, nil
}

// Close ends all watches; later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memory: close: %w", store.ErrClosed)
	}
	s.closed = true
	s.hub.Close()
	return nil
}

// readable validates path and read-locks the store; on success the caller
// must RUnlock.
func (s *Store) readable(ctx context.Context, op, path string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s %s: %w", op, path, err)
	}
	if err := store.ValidatePath(path); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("memory: %s %s: %w", op, path, store.ErrClosed)
	}
	return nil
}

func (s *Store) childNames(path string) []string {
	set := s.kids[path]
	if len(set) == 0 {
		return nil
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (s *Store) setNode(p string, n node) {
	s.nodes[p] = n
	parent := store.Parent(p)
	set := s.kids[parent]
	if set == nil {
		set = map[string]struct{}{}
		s.kids[parent] = set
	}
	set[store.Base(p)] = struct{}{}
}

func (s *Store) removeNode(p string) {
	delete(s.nodes, p)
	parent := store.Parent(p)
	if set := s.kids[parent]; set != nil {
		delete(set, store.Base(p))
		if len(set) == 0 {
			delete(s.kids, parent)
		}
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

package txn

import (
	"context"
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/store"
)

// Commit checks ops against the batch's view, in order, and adds them to
// the batch: all of them or, with the error the store would give, none.
func (t *Txn) Commit(ctx context.Context, ops ...store.Op) error {
	st := &staged{t: t, ctx: ctx, nodes: map[string]node{}}
	for _, op := range ops {
		if err := store.ValidatePath(op.Path); err != nil {
			return fmt.Errorf("txn %s: %w", op.Kind, err)
		}
		if op.Path == "/" && op.Kind != store.OpCheck {
			return fmt.Errorf("txn %s /: the root is not writable: %w", op.Kind, store.ErrBadPath)
		}
		if err := st.apply(op); err != nil {
			return fmt.Errorf("txn %s %s: %w", op.Kind, op.Path, err)
		}
	}
	for _, c := range st.cleared {
		t.clear(c)
	}
	for p, n := range st.nodes {
		t.nodes[p] = n
		for a := store.Parent(p); a != "/" && !t.parents[a]; a = store.Parent(a) {
			t.parents[a] = true
		}
	}
	t.ops = append(t.ops, ops...)
	return nil
}

// staged is one Commit being checked: its changes on top of the batch's.
type staged struct {
	t       *Txn
	ctx     context.Context
	nodes   map[string]node
	cleared []string
}

func (s *staged) get(p string) (node, error) {
	if n, ok := s.nodes[p]; ok {
		return n, nil
	}
	for _, c := range s.cleared {
		if store.Under(p, c) {
			return node{}, nil
		}
	}
	return s.t.view(s.ctx, p)
}

func (s *staged) apply(op store.Op) error {
	if op.Kind == store.OpCheck && s.trustedAsIs(op.Path) {
		return nil
	}
	cur, err := s.get(op.Path)
	if err != nil {
		return err
	}
	switch op.Kind {
	case store.OpCreate:
		if cur.exists {
			return store.ErrExists
		}
		return s.write(op.Path, op.Value, 0)
	case store.OpPut:
		if cur.exists {
			return s.write(op.Path, op.Value, cur.version+1)
		}
		return s.write(op.Path, op.Value, 0)
	case store.OpSet:
		if err := match(cur, op.Version); err != nil {
			return err
		}
		return s.write(op.Path, op.Value, cur.version+1)
	case store.OpDelete:
		if op.Version != store.AnyVersion {
			if err := match(cur, op.Version); err != nil {
				return err
			}
		}
		if cur.exists {
			s.remove(op.Path)
		}
		return nil
	case store.OpCheck:
		return match(cur, op.Version)
	}
	return fmt.Errorf("unknown op kind: %w", store.ErrBadPath)
}

func match(cur node, version int64) error {
	switch {
	case !cur.exists:
		return store.ErrNotFound
	case version != store.AnyVersion && cur.version != version:
		return store.ErrConflict
	}
	return nil
}

// trustedAsIs reports whether p is trusted to exist (Txn.Trust) and the
// batch has not written it or deleted a subtree holding it.
func (s *staged) trustedAsIs(p string) bool {
	if !s.t.trusted[p] {
		return false
	}
	if _, ok := s.nodes[p]; ok {
		return false
	}
	if _, ok := s.t.nodes[p]; ok {
		return false
	}
	for _, c := range s.cleared {
		if store.Under(p, c) {
			return false
		}
	}
	return !s.t.underCleared(p)
}

// write sets p and creates its missing ancestors as empty nodes.
func (s *staged) write(p string, value []byte, version int64) error {
	if len(value) == 0 {
		value = nil
	}
	for a := store.Parent(p); a != "/"; a = store.Parent(a) {
		n, err := s.get(a)
		if err != nil {
			return err
		}
		if n.exists {
			break
		}
		s.nodes[a] = node{exists: true}
	}
	s.nodes[p] = node{exists: true, value: value, version: version}
	return nil
}

// remove deletes p and its subtree.
func (s *staged) remove(p string) {
	for q := range s.nodes {
		if store.Under(q, p) {
			delete(s.nodes, q)
		}
	}
	s.nodes[p] = node{}
	s.cleared = append(s.cleared, p)
}

// clear makes the batch forget what it wrote under p and hide the base's
// nodes there (the staged commit's own nodes are copied in afterwards).
func (t *Txn) clear(p string) {
	t.cleared = append(t.cleared, p)
	if !t.parents[p] {
		return // nothing of the batch lies under p: the usual case, a leaf deleted
	}
	under := p + "/"
	for q := range t.nodes {
		if strings.HasPrefix(q, under) {
			delete(t.nodes, q)
		}
	}
}

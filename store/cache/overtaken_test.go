package cache_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
)

// linkedKV is a store without revisions (as SQLite and ZooKeeper are to
// the cache) whose chains are applied batch by batch, between calls to
// between: another writer's commit may land between two links, as an
// urgent one does on the embedded store. A commit of a path in slow
// calls slow once applied, before it answers: another writer's commit
// may land and answer first. Its watch passes an event on for each
// receive from pass, then every one once open is closed.
type linkedKV struct {
	store.KV
	between func(applied int)
	slow    string
	pass    chan struct{}
	open    chan struct{}
}

func (l *linkedKV) Commit(ctx context.Context, ops ...store.Op) error {
	if err := l.KV.Commit(ctx, ops...); err != nil {
		return err
	}
	if l.slow != "" && slices.ContainsFunc(ops, func(op store.Op) bool { return op.Path == l.slow }) {
		l.slow = "" // once: the commits made meanwhile answer at once
		l.between(1)
	}
	return nil
}

func (l *linkedKV) CommitChain(ctx context.Context, _ store.Hint, _ string, batches [][]store.Op) (int, [][]store.Event, error) {
	for i, b := range batches {
		if err := l.KV.Commit(ctx, b...); err != nil {
			return i, nil, err
		}
		if l.between != nil {
			l.between(i + 1)
		}
	}
	return len(batches), nil, nil
}

func (l *linkedKV) Watch(ctx context.Context, p string) (<-chan store.Event, error) {
	in, err := l.KV.Watch(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event)
	go func() {
		defer close(out)
		for ev := range in {
			select {
			case <-l.pass:
			case <-l.open:
			case <-ctx.Done():
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// TestChainDoesNotUndoACommitThatOvertookIt: a chain's link takes a
// job's last pending execution (the ready entry deleted); before the
// chain returns, a fire committed between its links finds the entry gone
// (its first try, on the copy's stale version, fails and re-reads it) and
// creates it again, and the copy follows both events. The chain's own
// outcome (the entry deleted), put into the copy when the chain returns,
// is older than what the copy holds by then: put there, it would hide the
// fire's entry for good (no event follows), and the fire would never run.
//
// The same holds for a single commit whose answer comes after another's
// that the store applied after it.
func TestChainDoesNotUndoACommitThatOvertookIt(t *testing.T) {
	t.Run("chain", func(t *testing.T) { testOvertaken(t, true) })
	t.Run("commit", func(t *testing.T) { testOvertaken(t, false) })
}

func testOvertaken(t *testing.T, chain bool) {
	ctx := t.Context()
	const ready = "/state/ready/j"
	back := &linkedKV{KV: struct{ store.KV }{memory.New()}, pass: make(chan struct{}), open: make(chan struct{})}
	if !chain {
		back.slow = ready
	}
	mustCommit(t, back.KV, store.Create(ready, []byte("1")))
	c, err := cache.Open(ctx, back, cache.Options{Roots: []string{"/state"}}) // as the scheduler opens it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	w, err := c.Watch(ctx, "/state/ready")
	if err != nil {
		t.Fatal(err)
	}
	stale, err := c.Get(ctx, ready)
	if err != nil {
		t.Fatal(err)
	}
	back.between = func(applied int) {
		if applied != 1 {
			return
		}
		// The fire's first try, on the version the copy still holds.
		if err := c.Commit(ctx, store.Set(ready, []byte("2"), stale.Version)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a fire on the entry the link took: %v, want it not found", err)
		}
		back.pass <- struct{}{}
		if ev := next(t, w); ev.Type != store.EventDelete || ev.Path != ready {
			t.Errorf("first event %+v, want the launch's delete of %s", ev, ready)
		}
		// Its second try, on what it read again: the entry made anew.
		if err := c.Commit(ctx, store.Create(ready, []byte("fire"))); err != nil {
			t.Errorf("the fire's second try: %v", err)
		}
		back.pass <- struct{}{}
		if ev := next(t, w); ev.Type != store.EventPut || ev.Path != ready {
			t.Errorf("second event %+v, want the fire's put of %s", ev, ready)
		}
		close(back.open)
	}
	launch := [][]store.Op{
		{store.Delete(ready, stale.Version)},
		{store.Put("/state/running/j/0", []byte("launched"))},
	}
	if chain {
		if n, _, err := c.CommitChain(ctx, nil, "/ha/chain", launch); err != nil || n != 2 {
			t.Fatalf("chain: %d links applied, %v", n, err)
		}
	} else if err := c.Commit(ctx, launch[0]...); err != nil {
		t.Fatalf("launch: %v", err)
	}
	if err := c.Barrier(ctx, "/state/marker", []byte("1"), c.Commit); err != nil {
		t.Fatal(err)
	}
	if nd, err := back.KV.Get(ctx, ready); err != nil || string(nd.Value) != "fire" {
		t.Fatalf("the store holds %q (%v), want the fire's entry", nd.Value, err)
	}
	if nd, err := c.Get(ctx, ready); err != nil || string(nd.Value) != "fire" {
		t.Fatalf("the copy holds %q (%v) after the launch answered, want the fire's entry the store holds", nd.Value, err)
	}
}

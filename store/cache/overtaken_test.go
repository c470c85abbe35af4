package cache_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
)

// linkedKV is a store without revisions (as SQLite and ZooKeeper are to
// the cache) whose chains are applied batch by batch, between calls to
// between: another writer's commit may land between two links, as an
// urgent one does on the embedded store. Its watch passes nothing on until
// release is closed.
type linkedKV struct {
	store.KV
	between func(applied int)
	release chan struct{}
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
		select {
		case <-l.release:
		case <-ctx.Done():
			return
		}
		for ev := range in {
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
func TestChainDoesNotUndoACommitThatOvertookIt(t *testing.T) {
	ctx := t.Context()
	const ready = "/state/ready/j"
	back := &linkedKV{KV: struct{ store.KV }{memory.New()}, release: make(chan struct{})}
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
		close(back.release)
		if ev := next(t, w); ev.Type != store.EventDelete || ev.Path != ready {
			t.Errorf("first event %+v, want the link's delete of %s", ev, ready)
		}
		// Its second try, on what it read again: the entry made anew.
		if err := c.Commit(ctx, store.Create(ready, []byte("fire"))); err != nil {
			t.Errorf("the fire's second try: %v", err)
		}
		if ev := next(t, w); ev.Type != store.EventPut || ev.Path != ready {
			t.Errorf("second event %+v, want the fire's put of %s", ev, ready)
		}
	}
	n, _, err := c.CommitChain(ctx, nil, "/ha/chain", [][]store.Op{
		{store.Delete(ready, stale.Version)},
		{store.Put("/state/running/j/0", []byte("launched"))},
	})
	if err != nil || n != 2 {
		t.Fatalf("chain: %d links applied, %v", n, err)
	}
	if err := c.Barrier(ctx, "/state/marker", []byte("1"), c.Commit); err != nil {
		t.Fatal(err)
	}
	if nd, err := back.KV.Get(ctx, ready); err != nil || string(nd.Value) != "fire" {
		t.Fatalf("the store holds %q (%v), want the fire's entry", nd.Value, err)
	}
	if nd, err := c.Get(ctx, ready); err != nil || string(nd.Value) != "fire" {
		t.Fatalf("the copy holds %q (%v) after the chain returned, want the fire's entry the store holds", nd.Value, err)
	}
}

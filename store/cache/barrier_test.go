package cache_test

import (
	"context"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
)

// heldKV passes its backing store's events on only once released: the
// notifications of another writer's changes are still queued.
type heldKV struct {
	store.KV
	release chan struct{}
}

func (h *heldKV) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	in, err := h.KV.Watch(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event)
	go func() {
		defer close(out)
		select {
		case <-h.release:
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

// TestBarrierWaitsForQueuedChanges: another writer's change whose
// notification is still queued is not in the copy; Barrier returns only
// once it is (a new leader must not act on the previous one's state
// without its last writes).
func TestBarrierWaitsForQueuedChanges(t *testing.T) {
	back := memory.New()
	ctx := t.Context()
	mustCommit(t, back, store.Put("/state/running/j/s0", []byte("old")))
	held := &heldKV{KV: back, release: make(chan struct{})}
	c, err := cache.Open(ctx, held, cache.Options{Roots: []string{"/state"}}) // as the scheduler opens it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	mustCommit(t, back, store.Delete("/state/running/j/s0", store.AnyVersion))
	mustCommit(t, back, store.Put("/state/running/j/s0", []byte("new"))) // deleted and created again: version 0 both times
	if n, _ := c.Get(ctx, "/state/running/j/s0"); string(n.Value) != "old" {
		t.Fatalf("the copy holds %q before the events pass; the test needs it stale", n.Value)
	}
	// While the events are held, the barrier cannot pass: it gives up
	// when its context ends (here, as soon as its marker is written).
	bctx, cancel := context.WithCancel(ctx)
	err = c.Barrier(bctx, "/state/leader_term", []byte("1"), func(ctx context.Context, ops ...store.Op) error {
		defer cancel()
		return c.Commit(ctx, ops...)
	})
	if err == nil {
		t.Fatal("the barrier passed while another writer's change was still queued")
	}
	close(held.release)
	if err := c.Barrier(ctx, "/state/leader_term", []byte("2"), c.Commit); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Get(ctx, "/state/running/j/s0"); err != nil || string(n.Value) != "new" {
		t.Fatalf("after the barrier the copy holds %q (%v), want the other writer's last value", n.Value, err)
	}
	if err := c.Barrier(ctx, "/other/x", nil, c.Commit); err == nil {
		t.Fatal("a barrier outside the mirrored roots was accepted")
	}
}

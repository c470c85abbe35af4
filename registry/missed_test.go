package registry

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// copyOf is a registry copy whose backing store is another store: what
// store/cache.KV looks like to Watermark, with the copy's lag in the
// test's hands.
type copyOf struct {
	store.KV
	back store.KV
}

func (c copyOf) Backing() store.KV { return c.back }

func putMark(t *testing.T, kv store.KV, at time.Time) {
	t.Helper()
	if err := kv.Commit(context.Background(), store.Put(firedPath, []byte(at.Format(time.RFC3339Nano)))); err != nil {
		t.Fatal(err)
	}
}

func TestWatermarkTakesTheLaterOfCopyAndStore(t *testing.T) {
	ctx := context.Background()
	cp, back := memory.New(), memory.New()
	t.Cleanup(func() { cp.Close(); back.Close() })
	r := New(copyOf{cp, back})

	if w, err := r.Schedule().Watermark(ctx); err != nil || w.OK || w.CopyBehind {
		t.Fatalf("nothing recorded: %+v, %v; want no watermark", w, err)
	}
	// The copy is behind the store (it missed the last fires' commits).
	putMark(t, cp, t0)
	putMark(t, back, t0.Add(4*time.Second))
	w, err := r.Schedule().Watermark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !w.OK || !w.Until.Equal(t0.Add(4*time.Second)) || !w.CopyBehind || !w.CopyUntil.Equal(t0) {
		t.Fatalf("copy behind: got %+v; want the store's %s, reported against the copy's %s", w, t0.Add(4*time.Second), t0)
	}
	if at, ok, err := r.Schedule().FiredUntil(ctx); err != nil || !ok || !at.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("FiredUntil = %s, %v, %v; want the store's", at, ok, err)
	}
	// A copy ahead of the store (its own commit, applied before the read of
	// the store) keeps its value and reports nothing.
	putMark(t, cp, t0.Add(6*time.Second))
	if w, err := r.Schedule().Watermark(ctx); err != nil || !w.Until.Equal(t0.Add(6*time.Second)) || w.CopyBehind {
		t.Fatalf("copy ahead: got %+v, %v; want the copy's %s", w, err, t0.Add(6*time.Second))
	}
	// Only the store has one.
	cp2 := memory.New()
	t.Cleanup(func() { cp2.Close() })
	if w, err := New(copyOf{cp2, back}).Schedule().Watermark(ctx); err != nil || !w.OK || !w.CopyBehind || !w.Until.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("copy without one: got %+v, %v; want the store's", w, err)
	}
	// A registry on the store itself reads it once.
	if w, err := New(back).Schedule().Watermark(ctx); err != nil || !w.OK || w.CopyBehind || !w.Until.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("no copy: got %+v, %v", w, err)
	}
}

package registry

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// next reads one change, or fails the test when none comes.
func next[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("the watch closed")
		}
		return c
	case <-time.After(10 * time.Second): // a bound on a hang, not a timing assertion
		t.Fatal("no change came")
	}
	panic("unreachable")
}

// TestWatchConfigAndReady: both subtrees of the configuration become typed changes, paths
// they do not name are skipped, the ready queue's writes and removals become ReadyChanges,
// and both channels close when ctx ends.
func TestWatchConfigAndReady(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	kv := memory.New()
	r := New(kv)
	cfg, err := r.WatchConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ready, err := r.WatchReady(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(ops ...store.Op) {
		t.Helper()
		if err := kv.Commit(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	commit(store.Put("/config/job/j1", []byte("{}")))
	if c := next(t, cfg); c != (ConfigChange{Kind: ConfigJob, Name: "j1"}) {
		t.Errorf("job change: %+v", c)
	}
	commit(store.Put("/config/job/j1/extra", []byte("x"))) // no change it names
	commit(store.Put("/state/disable/app/a1", nil))
	if c := next(t, cfg); c != (ConfigChange{Kind: ConfigAppDisabled, Name: "a1"}) {
		t.Errorf("app disable change: %+v", c)
	}
	commit(store.Put(ReadyPath+"/j1", []byte("{}")))
	if c := next(t, ready); c != (ReadyChange{Job: "j1", Present: true}) {
		t.Errorf("ready put: %+v", c)
	}
	commit(store.Delete(ReadyPath+"/j1", store.AnyVersion))
	if c := next(t, ready); c != (ReadyChange{Job: "j1"}) {
		t.Errorf("ready delete: %+v", c)
	}
	cancel()
	for _, closed := range []func() bool{
		func() bool { _, ok := <-cfg; return !ok },
		func() bool { _, ok := <-ready; return !ok },
	} {
		for !closed() { // changes still buffered are drained first
		}
	}
}

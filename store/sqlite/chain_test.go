package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
)

// chainTest is a store whose writer stops after a chain's link until
// released, so a test can queue commits there.
type chainTest struct {
	s        *Store
	at       int           // the link after which the writer stops
	stopped  chan struct{} // closed when it has
	release  chan struct{} // closed by the test to go on
	watching <-chan store.Event
}

func newChainTest(t *testing.T, at int) *chainTest {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ct := &chainTest{s: s, at: at, stopped: make(chan struct{}), release: make(chan struct{})}
	s.afterLink = func(applied int) {
		if applied == ct.at {
			close(ct.stopped)
			<-ct.release
		}
	}
	if ct.watching, err = s.Watch(t.Context(), "/w"); err != nil {
		t.Fatal(err)
	}
	return ct
}

// links is n links, link i putting /w/link-i.
func links(n int) [][]store.Op {
	out := make([][]store.Op, n)
	for i := range out {
		out[i] = []store.Op{store.Put(fmt.Sprintf("/w/link-%d", i), []byte("x"))}
	}
	return out
}

type chainResult struct {
	applied int
	events  [][]store.Event
	err     error
}

// chainAsync commits batches as a chain through kv on its own goroutine.
func chainAsync(ctx context.Context, kv store.KV, batches [][]store.Op) <-chan chainResult {
	out := make(chan chainResult, 1)
	go func() {
		n, evs, err := store.CommitChain(ctx, kv, nil, "/ha/chain", batches)
		out <- chainResult{n, evs, err}
	}()
	return out
}

func commitAsync(ctx context.Context, kv store.KV, ops ...store.Op) <-chan error {
	out := make(chan error, 1)
	go func() { out <- kv.Commit(ctx, ops...) }()
	return out
}

// awaitUrgent returns once an urgent commit waits for the writer.
func (ct *chainTest) awaitUrgent() {
	for ct.s.urgentWaiting.Load() == 0 {
		runtime.Gosched()
	}
}

// order is the paths of the first n nodes written (their parent /w left
// out).
func (ct *chainTest) order(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		ev, ok := <-ct.watching
		if !ok {
			t.Fatalf("watch ended after %v", out)
		}
		if ev.Type == store.EventPut && ev.Path != "/w" {
			out = append(out, ev.Path)
		}
	}
	return out
}

// TestUrgentCommitGoesBetweenChainLinks: an urgent commit (the producer's
// fires) that comes while a chain (a launch round) is being applied is
// committed after the link under way, before the chain's next link: it
// does not wait for the whole chain.
func TestUrgentCommitGoesBetweenChainLinks(t *testing.T) {
	ct := newChainTest(t, 1)
	ctx := t.Context()
	chain := chainAsync(ctx, ct.s, links(4))
	<-ct.stopped
	fire := commitAsync(store.Urgent(ctx), ct.s, store.Put("/w/fire", []byte("1")))
	ct.awaitUrgent()
	close(ct.release)
	if err := <-fire; err != nil {
		t.Fatal(err)
	}
	res := <-chain
	if res.err != nil || res.applied != 4 || len(res.events) != 4 {
		t.Fatalf("chain: %d applied, %d event lists, %v; want 4, 4, nil", res.applied, len(res.events), res.err)
	}
	for i, evs := range res.events {
		if want := fmt.Sprintf("/w/link-%d", i); !slices.ContainsFunc(evs, func(e store.Event) bool { return e.Path == want }) {
			t.Errorf("link %d's events %v do not name %s", i, evs, want)
		}
	}
	want := []string{"/w/link-0", "/w/fire", "/w/link-1", "/w/link-2", "/w/link-3"}
	if got := ct.order(t, len(want)); !slices.Equal(got, want) {
		t.Fatalf("committed in the order %v, want %v", got, want)
	}
}

// TestChainLinkFailsOnWhatAnUrgentCommitChanged: a link conditional on a
// node an urgent commit changed between two links fails, and no link after
// it is applied; those before it stay.
func TestChainLinkFailsOnWhatAnUrgentCommitChanged(t *testing.T) {
	ct := newChainTest(t, 1)
	ctx := t.Context()
	if err := ct.s.Commit(ctx, store.Create("/w/ready", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	chain := chainAsync(ctx, ct.s, [][]store.Op{
		{store.Put("/w/link-0", nil)},
		{store.Set("/w/ready", []byte("dequeued"), 0), store.Put("/w/link-1", nil)},
		{store.Put("/w/link-2", nil)},
	})
	<-ct.stopped
	fire := commitAsync(store.Urgent(ctx), ct.s, store.Set("/w/ready", []byte("2"), 0))
	ct.awaitUrgent()
	close(ct.release)
	if err := <-fire; err != nil {
		t.Fatal(err)
	}
	res := <-chain
	if res.applied != 1 || !errors.Is(res.err, store.ErrConflict) {
		t.Fatalf("chain: %d applied, %v; want 1, a conflict", res.applied, res.err)
	}
	for p, want := range map[string]bool{"/w/link-0": true, "/w/link-1": false, "/w/link-2": false} {
		if _, err := ct.s.Get(ctx, p); (err == nil) != want {
			t.Errorf("Get(%s): %v; present: want %v", p, err, want)
		}
	}
	if n, err := ct.s.Get(ctx, "/w/ready"); err != nil || string(n.Value) != "2" {
		t.Fatalf("/w/ready = %q, %v; want the urgent commit's", n.Value, err)
	}
}

// TestChainThroughTheCache: the scheduler's registry commits through the
// cache in front of the store; a chain there reaches the store as a chain
// (not one commit of every link), and an urgent commit there goes between
// its links.
func TestChainThroughTheCache(t *testing.T) {
	ct := newChainTest(t, 2)
	ctx := t.Context()
	c, err := cache.Open(ctx, ct.s, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	chain := chainAsync(ctx, c, links(4))
	<-ct.stopped
	fire := commitAsync(store.Urgent(ctx), c, store.Put("/w/fire", []byte("1")))
	ct.awaitUrgent()
	close(ct.release)
	if err := <-fire; err != nil {
		t.Fatal(err)
	}
	if res := <-chain; res.err != nil || res.applied != 4 {
		t.Fatalf("chain: %d applied, %v; want 4, nil", res.applied, res.err)
	}
	want := []string{"/w/link-0", "/w/link-1", "/w/fire", "/w/link-2", "/w/link-3"}
	if got := ct.order(t, len(want)); !slices.Equal(got, want) {
		t.Fatalf("committed in the order %v, want %v", got, want)
	}
	if n, err := c.Get(ctx, "/w/link-3"); err != nil || string(n.Value) != "x" {
		t.Fatalf("the cache's copy of the chain's last link: %q, %v", n.Value, err)
	}
}

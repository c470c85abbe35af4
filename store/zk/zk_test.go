package zk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/storetest"
)

// zkServers returns EJ_TEST_ZK (set by `scripts/services.sh start DIR; . DIR/env`).
// Without it the tests skip, except in CI where they must run.
func zkServers(t testing.TB) []string {
	t.Helper()
	return strings.Split(testproxy.ZK(t), ",")
}

var nsSeq atomic.Int64

// uniqueNamespace gives every store its own tree on the shared server.
func uniqueNamespace(t testing.TB) string {
	return fmt.Sprintf("ejtest/%d-%d/%s", time.Now().UnixNano(), nsSeq.Add(1),
		strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func openTest(t testing.TB, o Options) *Store {
	t.Helper()
	if o.Servers == nil {
		o.Servers = zkServers(t)
	}
	if o.Namespace == "" {
		o.Namespace = uniqueNamespace(t)
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	zkServers(t)
	storetest.RunOptions(t, func(t *testing.T) store.KV {
		return openTest(t, Options{SessionTimeout: 10 * time.Second})
	}, storetest.Options{ManyChildren: 2000, SlowEvents: 2000, Timeout: 20 * time.Second})
}

func TestDigestACL(t *testing.T) {
	ns := uniqueNamespace(t)
	owner := openTest(t, Options{Namespace: ns, Digest: "ej:secret"})
	ctx := t.Context()
	if err := owner.Commit(ctx, store.Create("/private/x", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	if n, err := owner.Get(ctx, "/private/x"); err != nil || string(n.Value) != "v" {
		t.Fatalf("owner Get = %+v, %v", n, err)
	}
	stranger := openTest(t, Options{Namespace: ns, Digest: "other:pw"})
	if _, err := stranger.Get(ctx, "/private/x"); err == nil {
		t.Fatal("a client with other credentials read a creator-only node")
	}
	same := openTest(t, Options{Namespace: ns, Digest: "ej:secret"})
	if _, err := same.Get(ctx, "/private/x"); err != nil {
		t.Fatalf("same credentials: %v", err)
	}
}

// TestWrongHintsArePlannedAgain: a commit planned from a wrong hint (a
// node believed present that is absent and the reverse, a directory
// believed empty that has children, an ancestor believed present) still
// writes exactly what its ops say. One wrong belief per commit: the first
// refused step re-plans the whole commit.
func TestWrongHintsArePlannedAgain(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	if err := s.Commit(ctx, store.Create("/x", []byte("old")), store.Create("/d/c", nil), store.Create("/e", nil)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		lies map[string]bool
		op   store.Op
		want map[string]string // path → value; "" for absent
	}{
		{"put of an absent node believed present", map[string]bool{"/a": true, "/a/b": true}, store.Put("/a/b", []byte("new")), map[string]string{"/a/b": "new"}},
		{"put of a present node believed absent", map[string]bool{"/x": false}, store.Put("/x", []byte("set")), map[string]string{"/x": "set"}},
		{"delete of a directory believed empty", map[string]bool{"/d": true}, store.Delete("/d", store.AnyVersion), map[string]string{"/d": "", "/d/c": ""}},
		{"delete of a node believed absent", map[string]bool{"/e": false}, store.Delete("/e", store.AnyVersion), map[string]string{"/e": ""}},
		{"create under ancestors believed present", map[string]bool{"/f": true, "/f/g": true, "/f/g/i": true}, store.Create("/f/g/i/h", []byte("h")), map[string]string{"/f/g/i/h": "h"}},
	} {
		hint := func(p string, _ bool) (bool, []string, bool) {
			v, ok := c.lies[p]
			return v, nil, ok // every directory believed empty
		}
		if _, err := s.CommitReportHinted(ctx, hint, c.op); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for p, want := range c.want {
			n, err := s.Get(ctx, p)
			if want == "" && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: %s after its delete: %v", c.name, p, err)
			}
			if want != "" && (err != nil || string(n.Value) != want) {
				t.Errorf("%s: %s = %q, %v; want %q", c.name, p, n.Value, err, want)
			}
		}
	}
}

// TestSubtreeMatchesListing: Subtree returns what a walk List by List
// finds, values and versions included, for a subtree, the root and a
// missing path.
func TestSubtreeMatchesListing(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	ops := []store.Op{store.Create("/t/empty", nil), store.Create("/t/a/b/c", []byte("c")), store.Create("/u", []byte("u"))}
	for i := range 300 {
		ops = append(ops, store.Create(fmt.Sprintf("/t/many/%03d", i), fmt.Appendf(nil, "%d", i)))
	}
	if err := s.Commit(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, store.Put("/t/a/b", []byte("b2")), store.Put("/t/a/b", []byte("b3"))); err != nil {
		t.Fatal(err)
	}
	var walk func(p string, out map[string]store.Node)
	walk = func(p string, out map[string]store.Node) {
		kids, err := s.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			out[k.Path] = k
			walk(k.Path, out)
		}
	}
	for _, root := range []string{"/t", "/"} {
		want := map[string]store.Node{}
		if root != "/" {
			n, err := s.Get(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			want[root] = n
		}
		walk(root, want)
		nodes, err := s.Subtree(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]store.Node{}
		for _, n := range nodes {
			got[n.Path] = n
		}
		if len(got) != len(nodes) || len(got) != len(want) {
			t.Fatalf("Subtree(%s): %d nodes (%d distinct), a walk finds %d", root, len(nodes), len(got), len(want))
		}
		for p, w := range want {
			if g, ok := got[p]; !ok || string(g.Value) != string(w.Value) || g.Version != w.Version {
				t.Fatalf("Subtree(%s)[%s] = %+v, want %+v", root, p, g, w)
			}
		}
	}
	if nodes, err := s.Subtree(ctx, "/missing"); err != nil || len(nodes) != 0 {
		t.Fatalf("Subtree of a missing path = %v, %v", nodes, err)
	}
}

// A subtree created in one commit is reported whole before the changes
// committed after it: the registry cache's Barrier (a new leader's first
// read) relies on every change before its marker being in the copy when
// the marker's event passes, children of a new directory included (a
// job's running shards, created with their directory). The watch learns of
// the children by reading the new directory, after the marker's
// notification may already have arrived.
func TestNewSubtreeBeforeLaterChanges(t *testing.T) {
	s := openTest(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Commit(ctx, store.Put("/w/marker", nil), store.Put("/w/dirs/seed", nil)); err != nil {
		t.Fatal(err)
	}
	events, err := s.Watch(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range 20 {
		d := fmt.Sprintf("/w/dirs/d%02d", i)
		if err := s.Commit(ctx, store.Put(d+"/a", []byte("x")), store.Put(d+"/b/c", []byte("y"))); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, store.Put("/w/marker", []byte(strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
		untilMarker(ctx, t, events, "/w/marker", int64(i+1), func(ev store.Event) { seen[ev.Path] = true })
		for _, p := range []string{d, d + "/a", d + "/b", d + "/b/c"} {
			if !seen[p] {
				t.Fatalf("round %d: the marker's event came before that of %s, created before it", i, p)
			}
		}
	}
}

// TestRecreatedNodeFollowed: a node deleted and created again while the
// watch's notifications wait (its parent's child watch already fired, so
// the re-creation notifies nothing) is the new node once the delete is
// handled, and the watch follows it afterwards. The watch used to take the
// name in its parent's listing for the node it knew, then forget the path
// at the old node's delete: the new node was missing from the consumer's
// copy, and its own changes were never reported (a new leader's registry
// cache kept a finished task as running and missed the one launched in its
// place).
func TestRecreatedNodeFollowed(t *testing.T) {
	ns := uniqueNamespace(t)
	w := openTest(t, Options{Namespace: ns})
	s := openTest(t, Options{Namespace: ns})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	commit := func(ops ...store.Op) {
		t.Helper()
		if err := s.Commit(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	commit(store.Put("/d/x", []byte("old")), store.Put("/d/m", nil))
	events, err := w.Watch(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	marks := int64(0)
	settle := func() { // every change before a new marker write is reported before its event
		t.Helper()
		marks++
		commit(store.Put("/d/m", []byte(strconv.FormatInt(marks, 10))))
		untilMarker(ctx, t, events, "/d/m", marks, func(ev store.Event) {
			if ev.Type == store.EventPut {
				have[ev.Path] = true
			} else {
				delete(have, ev.Path)
			}
		})
	}
	// Hold the watch's notifications (the client's receive loop waits on
	// the callback) while another client fires the parent's child watch,
	// then deletes the node and creates it again.
	w.mu.Lock()
	commit(store.Put("/d/y", nil))
	commit(store.Delete("/d/x", store.AnyVersion))
	commit(store.Put("/d/x", []byte("new")))
	w.mu.Unlock()
	settle()
	if !have["/d/x"] || !have["/d/y"] {
		t.Fatalf("after a re-creation the copy holds %v, want /d/x and /d/y", have)
	}
	// The new node is watched: its change and its delete are reported.
	commit(store.Put("/d/x", []byte("changed")))
	settle()
	commit(store.Delete("/d/x", store.AnyVersion))
	settle()
	if have["/d/x"] {
		t.Fatalf("after the new node's delete the copy holds %v", have)
	}
}

// untilMarker hands each event to fn until the event of marker's version
// (included); a resync, or ctx ending first, fails the test.
func untilMarker(ctx context.Context, t *testing.T, events <-chan store.Event, marker string, version int64, fn func(store.Event)) {
	t.Helper()
	for {
		var ev store.Event
		select {
		case ev = <-events:
		case <-ctx.Done():
			t.Fatalf("no event of %s version %d", marker, version)
		}
		if ev.Type == store.EventResync {
			t.Fatalf("a resync before the event of %s version %d", marker, version)
		}
		fn(ev)
		if ev.Path == marker && ev.Version == version {
			return
		}
	}
}

// TestWatchDeliversWhileHandling: the events of a long run of
// notifications reach the consumer while the watch handles the rest, so a
// consumer that keeps up never sees a resync. The watch here holds at most
// 128 undelivered events; 300 nodes each written three times while its
// notifications are held make 900 events in one run. That is less than the
// consumer's channel holds (outBuffer), so the outcome does not depend on
// how fast the test reads; a watch that handed nothing on before the run's
// end failed every time.
func TestWatchDeliversWhileHandling(t *testing.T) {
	ns := uniqueNamespace(t)
	w := openTest(t, Options{Namespace: ns})
	w.maxPending = 128
	s := openTest(t, Options{Namespace: ns})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const nodes, writes = 300, 3
	var events <-chan store.Event
	for round := range writes + 1 { // a create, then the writes
		var ops []store.Op
		for i := range nodes {
			ops = append(ops, store.Put(fmt.Sprintf("/d/n%03d", i), []byte(strconv.Itoa(round))))
			if len(ops) == 100 || i == nodes-1 {
				if err := s.Commit(ctx, ops...); err != nil {
					t.Fatal(err)
				}
				ops = nil
			}
		}
		if round > 0 {
			continue
		}
		var err error
		if events, err = w.Watch(ctx, "/d"); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock() // the notifications of the writes wait in the client
	}
	if err := s.Commit(ctx, store.Put("/d/m", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	w.mu.Unlock() // and the consumer reads at once
	last := map[string]int64{}
	untilMarker(ctx, t, events, "/d/m", 0, func(ev store.Event) {
		if ev.Type == store.EventPut && ev.Path != "/d/m" {
			if ev.Version != last[ev.Path]+1 {
				t.Fatalf("%s: version %d after %d", ev.Path, ev.Version, last[ev.Path])
			}
			last[ev.Path] = ev.Version
		}
	})
	for i := range nodes {
		if p := fmt.Sprintf("/d/n%03d", i); last[p] != writes {
			t.Fatalf("%s: last event of version %d, want %d", p, last[p], writes)
		}
	}
}

// TestPersistentWatchDuringScan: changes made while a Watch reads its
// subtree are reported exactly once each after it, with the versions the
// server gave them: the notifications that arrive during the scan are
// judged against the reads (a notification before a read's reply is in
// the read). A writer changes, creates and deletes nodes all through the
// Watch's start; every path's events then carry consecutive versions
// ending at the server's.
func TestPersistentWatchDuringScan(t *testing.T) {
	ns := uniqueNamespace(t)
	w := openTest(t, Options{Namespace: ns})
	s := openTest(t, Options{Namespace: ns})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const nodes = 300
	var ops []store.Op
	for i := range nodes {
		ops = append(ops, store.Put(fmt.Sprintf("/d/g%d/n%03d", i%7, i), nil))
	}
	if err := s.Commit(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			p := fmt.Sprintf("/d/g%d/n%03d", i%7, (i*37)%nodes)
			ops := []store.Op{store.Put(p, []byte(strconv.Itoa(i)))}
			if i%5 == 0 {
				ops = append(ops, store.Put(fmt.Sprintf("/d/new/x%d", i%11), nil))
			}
			if i%5 == 3 {
				ops = append(ops, store.Delete(fmt.Sprintf("/d/new/x%d", (i+2)%11), store.AnyVersion))
			}
			if err := s.Commit(ctx, ops...); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond) // the writer is under way when the scan starts
	events, err := w.Watch(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, store.Put("/d/m", nil)); err != nil {
		t.Fatal(err)
	}
	last := map[string]store.Event{}
	untilMarker(ctx, t, events, "/d/m", 0, func(ev store.Event) {
		prev, seen := last[ev.Path]
		switch {
		case ev.Type == store.EventPut && seen && prev.Type == store.EventPut && ev.Version != prev.Version+1:
			t.Fatalf("%s: version %d after %d", ev.Path, ev.Version, prev.Version)
		case ev.Type == store.EventPut && seen && prev.Type == store.EventDelete && ev.Version != 0:
			t.Fatalf("%s: created again at version %d", ev.Path, ev.Version)
		case seen && ev.Type == prev.Type && ev.Type == store.EventDelete:
			t.Fatalf("%s: deleted twice", ev.Path)
		}
		last[ev.Path] = ev
	})
	if len(last) < 10 {
		t.Fatalf("only %d paths changed after the watch began", len(last))
	}
	for p, ev := range last {
		n, err := s.Get(ctx, p)
		switch {
		case ev.Type == store.EventDelete && !errors.Is(err, store.ErrNotFound):
			t.Fatalf("%s: last event a delete, the server has %+v, %v", p, n, err)
		case ev.Type == store.EventPut && (err != nil || n.Version != ev.Version):
			t.Fatalf("%s: last event version %d, the server has %+v, %v", p, ev.Version, n, err)
		}
	}
}

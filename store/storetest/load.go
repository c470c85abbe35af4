package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// watchSlowConsumer writes SlowEvents events while nobody reads the watch.
// Commit must not block; draining afterwards must give either every event
// in order or an EventResync for the watched root.
func (s suite) watchSlowConsumer(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/slow/n", nil))
	ch, _ := watch(t, kv, "/slow")
	done := make(chan error, 1)
	go func() { done <- s.fill(t, kv, "/slow/n", s.opts.SlowEvents) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(4 * s.opts.Timeout):
		t.Fatalf("Commit blocked behind a watcher that is not reading")
	}
	commit(t, kv, store.Put("/slow", []byte("end")))
	if s.opts.PerPathOrder {
		s.slowPerPath(t, ch)
		return
	}
	nextSeq, resync := 0, false
	for {
		ev := s.next(t, ch)
		switch {
		case ev.Type == store.EventResync:
			if ev.Path != "/slow" {
				t.Fatalf("resync path %q, want /slow", ev.Path)
			}
			resync = true
		case ev.Path == "/slow":
			if !resync && nextSeq != s.opts.SlowEvents {
				t.Fatalf("end marker after %d of %d events and no resync", nextSeq, s.opts.SlowEvents)
			}
			t.Logf("%d events delivered before the end marker, resync=%v", nextSeq, resync)
			return
		case !resync:
			if want := childName("/slow/n", nextSeq); ev.Path != want || ev.Type != store.EventPut {
				t.Fatalf("event %d = %+v, want put %s", nextSeq, ev, want)
			}
			nextSeq++
		}
	}
}

func childName(dir string, i int) string { return fmt.Sprintf("%s/%06d", dir, i) }

// fill creates n children of dir with values "i", Batch ops per Commit.
func (s suite) fill(t *testing.T, kv store.KV, dir string, n int) error {
	for start := 0; start < n; start += s.opts.Batch {
		ops := make([]store.Op, 0, s.opts.Batch)
		for i := start; i < n && i < start+s.opts.Batch; i++ {
			ops = append(ops, store.Create(childName(dir, i), []byte(strconv.Itoa(i))))
		}
		if err := kv.Commit(t.Context(), ops...); err != nil {
			return fmt.Errorf("fill %s [%d,%d): %w", dir, start, start+len(ops), err)
		}
	}
	return nil
}

func (s suite) manyChildren(t *testing.T, kv store.KV) {
	n := s.opts.ManyChildren
	if err := s.fill(t, kv, "/big", n); err != nil {
		t.Fatal(err)
	}
	commit(t, kv, store.Create("/big0/x", nil), store.Create("/big/000000/deep", nil))
	names := children(t, kv, "/big")
	if len(names) != n {
		t.Fatalf("Children(/big) has %d names, want %d", len(names), n)
	}
	nodes, err := kv.List(t.Context(), "/big")
	if err != nil || len(nodes) != n {
		t.Fatalf("List(/big) = %d nodes, %v; want %d", len(nodes), err, n)
	}
	for i := range n {
		p := childName("/big", i)
		if names[i] != p[len("/big/"):] || nodes[i].Path != p || string(nodes[i].Value) != strconv.Itoa(i) {
			t.Fatalf("child %d = %q / %s, want %s", i, names[i], nodesString(nodes[i:i+1]), p)
		}
	}
}

func (s suite) largeValue(t *testing.T, kv store.KV) {
	big := make([]byte, s.opts.MaxValue)
	for i := range big {
		big[i] = byte(i*7 + i>>8)
	}
	commit(t, kv, store.Put("/big/value", big), store.Put("/big/zero", []byte{0, 0, 0}))
	if n := get(t, kv, "/big/value"); !bytes.Equal(n.Value, big) {
		t.Fatalf("Get returned %d bytes, want the %d written", len(n.Value), len(big))
	}
	nodes, err := kv.List(t.Context(), "/big")
	if err != nil || len(nodes) != 2 || !bytes.Equal(nodes[0].Value, big) {
		t.Fatalf("List(/big) = %d nodes, %v; want the big value first", len(nodes), err)
	}
	wantNode(t, kv, "/big/zero", "\x00\x00\x00", 0)
	big[0]++ // the store must have copied the value
	if n := get(t, kv, "/big/value"); n.Value[0] == big[0] {
		t.Fatal("store aliases the caller's value slice")
	}
}

// concurrentCAS: Workers goroutines each add Increments to a counter with
// read-modify-write Set(version), retrying on ErrConflict.
func (s suite) concurrentCAS(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/counter", []byte("0")))
	var wg sync.WaitGroup
	errs := make(chan error, s.opts.Workers)
	for range s.opts.Workers {
		wg.Go(func() {
			for range s.opts.Increments {
				if err := increment(t, kv, "/counter"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := s.opts.Workers * s.opts.Increments
	wantNode(t, kv, "/counter", strconv.Itoa(total), int64(total))
}

func increment(t *testing.T, kv store.KV, path string) error {
	for {
		n, err := kv.Get(t.Context(), path)
		if err != nil {
			return err
		}
		v, err := strconv.Atoi(string(n.Value))
		if err != nil {
			return fmt.Errorf("counter %q: %w", n.Value, err)
		}
		err = kv.Commit(t.Context(), store.Set(path, []byte(strconv.Itoa(v+1)), n.Version))
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
}

func (s suite) closeStore(t *testing.T, kv store.KV) {
	commit(t, kv, store.Create("/c", nil))
	ch, _ := watch(t, kv, "/")
	if err := kv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s.waitClosed(t, ch)
	ctx := t.Context()
	_, err := kv.Get(ctx, "/c")
	wantErr(t, "Get after Close", err, store.ErrClosed)
	_, err = kv.Children(ctx, "/")
	wantErr(t, "Children after Close", err, store.ErrClosed)
	_, err = kv.List(ctx, "/")
	wantErr(t, "List after Close", err, store.ErrClosed)
	_, err = kv.Watch(ctx, "/")
	wantErr(t, "Watch after Close", err, store.ErrClosed)
	wantErr(t, "Commit after Close", kv.Commit(ctx, store.Put("/d", nil)), store.ErrClosed)
	if err := kv.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// slowPerPath is the slow-consumer check for a store that orders events
// per path only: the end marker may overtake children's events, but every
// child's create arrives once (or a resync stands for the missed ones).
func (s suite) slowPerPath(t *testing.T, ch <-chan store.Event) {
	seen := map[string]bool{}
	marker := false
	for !marker || len(seen) < s.opts.SlowEvents {
		ev := s.next(t, ch)
		switch {
		case ev.Type == store.EventResync:
			t.Logf("resync after %d children", len(seen))
			return
		case ev.Path == "/slow":
			marker = true
		case ev.Type == store.EventPut && strings.HasPrefix(ev.Path, "/slow/n/"):
			if seen[ev.Path] {
				t.Fatalf("create of %s reported twice", ev.Path)
			}
			seen[ev.Path] = true
		}
	}
	t.Logf("%d events delivered (order per path), no resync", len(seen))
}

package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// Options scales the suite. Zero fields take the defaults.
type Options struct {
	Workers      int           // goroutines in the CAS test (default 8)
	Increments   int           // increments per goroutine (default 25)
	ManyChildren int           // children of one node (default 10,000)
	MaxValue     int           // largest value round-tripped (default 1 MiB)
	SlowEvents   int           // events written to a stalled watcher (default 5,000)
	Batch        int           // ops per Commit when filling (default 500)
	Timeout      time.Duration // failure deadline for one wait (default 10s)
	LinearOps    int           // operations per client in the linearizability check (default 150)

	// SkipEventVersion stops the suite from checking Event.Version of
	// EventPut, for an implementation whose change feed cannot carry it.
	SkipEventVersion bool
	// PerPathOrder relaxes the event order check to each path's own
	// order (the store.KV contract); without it the suite checks the
	// stricter global commit order that the memory and SQLite stores give.
	PerPathOrder bool
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Workers, 8)
	def(&o.Increments, 25)
	def(&o.ManyChildren, 10_000)
	def(&o.MaxValue, 1<<20)
	def(&o.SlowEvents, 5_000)
	def(&o.Batch, 500)
	def(&o.LinearOps, 150)
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return o
}

// Opener returns a fresh, empty store; it should register its own Close
// with t.Cleanup (a second Close returning ErrClosed is fine).
type Opener func(t *testing.T) store.KV

type suite struct {
	open Opener
	opts Options
}

// Run runs the conformance suite with default options.
func Run(t *testing.T, open func(t *testing.T) store.KV) {
	RunOptions(t, open, Options{})
}

// RunOptions runs the conformance suite with opts.
func RunOptions(t *testing.T, open func(t *testing.T) store.KV, opts Options) {
	s := suite{open: open, opts: opts.withDefaults()}
	tests := []struct {
		name string
		fn   func(t *testing.T, kv store.KV)
	}{
		{"GetMissing", s.getMissing},
		{"Create", s.create},
		{"Put", s.put},
		{"Set", s.set},
		{"Versions", s.versions},
		{"Ancestors", s.ancestors},
		{"Root", s.root},
		{"Children", s.children},
		{"List", s.list},
		{"Delete", s.deleteOps},
		{"Chain", s.chain},
		{"DeleteRecursive", s.deleteRecursive},
		{"Check", s.check},
		{"CommitInOrder", s.commitInOrder},
		{"CommitAtomic", s.commitAtomic},
		{"CommitFirstError", s.commitFirstError},
		{"CommitLargeBatch", s.commitLargeBatch},
		{"BadPaths", s.badPaths},
		{"WatchEvents", s.watchEvents},
		{"WatchRecursiveDelete", s.watchRecursiveDelete},
		{"WatchNotBefore", s.watchNotBefore},
		{"WatchSubtree", s.watchSubtree},
		{"WatchCancel", s.watchCancel},
		{"Revisioned", s.revisioned},
		{"WatchSlowConsumer", s.watchSlowConsumer},
		{"ConcurrentCAS", s.concurrentCAS},
		{"Linearizable", s.linearizable},
		{"LargeValue", s.largeValue},
		{"ManyChildren", s.manyChildren},
		{"Close", s.closeStore},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, s.open(t)) })
	}
}

// ---- helpers ----

func commit(t *testing.T, kv store.KV, ops ...store.Op) {
	t.Helper()
	if err := kv.Commit(t.Context(), ops...); err != nil {
		t.Fatalf("Commit(%s): %v", describe(ops), err)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func commitErr(t *testing.T, kv store.KV, target error, ops ...store.Op) {
	t.Helper()
	wantErr(t, "Commit("+describe(ops)+")", kv.Commit(t.Context(), ops...), target)
}

func get(t *testing.T, kv store.KV, path string) store.Node {
	t.Helper()
	n, err := kv.Get(t.Context(), path)
	if err != nil {
		t.Fatalf("Get(%s): %v", path, err)
	}
	if n.Path != path {
		t.Fatalf("Get(%s).Path = %q", path, n.Path)
	}
	return n
}

// wantNode asserts value (nil and empty are equal) and version of path.
func wantNode(t *testing.T, kv store.KV, path, value string, version int64) {
	t.Helper()
	n := get(t, kv, path)
	if !bytes.Equal(n.Value, []byte(value)) || n.Version != version {
		t.Fatalf("Get(%s) = (%q, v%d), want (%q, v%d)", path, n.Value, n.Version, value, version)
	}
}

func wantMissing(t *testing.T, kv store.KV, path string) {
	t.Helper()
	_, err := kv.Get(t.Context(), path)
	wantErr(t, "Get("+path+")", err, store.ErrNotFound)
}

func children(t *testing.T, kv store.KV, path string) []string {
	t.Helper()
	names, err := kv.Children(t.Context(), path)
	if err != nil {
		t.Fatalf("Children(%s): %v", path, err)
	}
	return names
}

func watch(t *testing.T, kv store.KV, path string) (<-chan store.Event, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	ch, err := kv.Watch(ctx, path)
	if err != nil {
		t.Fatalf("Watch(%s): %v", path, err)
	}
	return ch, cancel
}

// next returns the next event, failing the test after the deadline.
func (s suite) next(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed early")
		}
		return ev
	case <-time.After(s.opts.Timeout):
		t.Fatalf("no event within %v", s.opts.Timeout)
	}
	return store.Event{}
}

// waitClosed drains ch until it is closed, failing after the deadline.
func (s suite) waitClosed(t *testing.T, ch <-chan store.Event) {
	t.Helper()
	deadline := time.After(s.opts.Timeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch channel not closed within %v", s.opts.Timeout)
		}
	}
}

func describe(ops []store.Op) string {
	var b bytes.Buffer
	for i, op := range ops {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 4 && len(ops) > 5 {
			b.WriteString("...")
			break
		}
		kinds := map[store.OpKind]string{store.OpCreate: "Create", store.OpPut: "Put",
			store.OpSet: "Set", store.OpDelete: "Delete", store.OpCheck: "Check"}
		b.WriteString(kinds[op.Kind] + "(" + op.Path + ")")
	}
	return b.String()
}

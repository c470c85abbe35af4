package txn_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/store/txn"
)

var paths = []string{"/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f"}

func randomOps(r *rand.Rand) []store.Op {
	n := 1 + r.IntN(3)
	ops := make([]store.Op, 0, n)
	for range n {
		p := paths[r.IntN(len(paths))]
		v := int64(r.IntN(3)) - 1 // AnyVersion, 0 or 1
		val := fmt.Appendf(nil, "%d", r.IntN(100))
		switch r.IntN(5) {
		case 0:
			ops = append(ops, store.Create(p, val))
		case 1:
			ops = append(ops, store.Put(p, val))
		case 2:
			ops = append(ops, store.Set(p, val, v))
		case 3:
			ops = append(ops, store.Delete(p, v))
		default:
			ops = append(ops, store.Check(p, v))
		}
	}
	return ops
}

// TestTxnBehavesLikeTheStore: commits through a Txn succeed and fail as
// on the store itself, reads see them, and Flush leaves the base exactly
// as committing them one by one would.
func TestTxnBehavesLikeTheStore(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		base, want := memory.New(), memory.New()
		for _, kv := range []store.KV{base, want} { // same starting tree
			_ = kv.Commit(ctx, store.Create("/a/b", []byte("x")), store.Create("/e", nil))
		}
		tx := txn.New(base)
		for step := range 8 {
			ops := randomOps(r)
			errWant := want.Commit(ctx, ops...)
			errGot := tx.Commit(ctx, ops...)
			if !sameErr(errWant, errGot) {
				t.Fatalf("seed %d step %d %v: store says %v, txn says %v", seed, step, ops, errWant, errGot)
			}
			equalView(t, seed, want, tx, "/")
		}
		if err := tx.Flush(ctx); err != nil {
			t.Fatalf("seed %d: flush: %v", seed, err)
		}
		equalView(t, seed, want, base, "/")
	}
}

func sameErr(a, b error) bool {
	for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrConflict, store.ErrBadPath} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return (a == nil) == (b == nil)
}

func equalView(t *testing.T, seed uint64, want, got store.KV, p string) {
	t.Helper()
	ctx := context.Background()
	a, errA := want.Get(ctx, p)
	b, errB := got.Get(ctx, p)
	if (errA == nil) != (errB == nil) || string(a.Value) != string(b.Value) || a.Version != b.Version {
		t.Fatalf("seed %d: %s: want %+v (%v), got %+v (%v)", seed, p, a, errA, b, errB)
	}
	ka, _ := want.Children(ctx, p)
	kb, _ := got.Children(ctx, p)
	if fmt.Sprint(ka) != fmt.Sprint(kb) {
		t.Fatalf("seed %d: children of %s: want %v, got %v", seed, p, ka, kb)
	}
	la, _ := want.List(ctx, p)
	lb, _ := got.List(ctx, p)
	if len(la) != len(lb) {
		t.Fatalf("seed %d: list of %s: want %d nodes, got %d", seed, p, len(la), len(lb))
	}
	for _, k := range ka {
		equalView(t, seed, want, got, store.Join(p, k))
	}
}

// TestFlushFailsOnARace: a write to the base between a read and the
// flush fails the whole flush; nothing of the batch is written.
func TestFlushFailsOnARace(t *testing.T) {
	ctx := context.Background()
	base := memory.New()
	_ = base.Commit(ctx, store.Create("/n", []byte("0")))
	tx := txn.New(base)
	n, _ := tx.Get(ctx, "/n")
	if err := tx.Commit(ctx, store.Set("/n", []byte("1"), n.Version), store.Create("/other", nil)); err != nil {
		t.Fatal(err)
	}
	if err := base.Commit(ctx, store.Put("/n", []byte("raced"))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Flush(ctx); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("flush after a race: %v", err)
	}
	if _, err := base.Get(ctx, "/other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a failed flush wrote part of the batch")
	}
	if tx.Len() != 0 {
		t.Fatal("the batch was not emptied")
	}
}

// countingKV counts the Gets of each path.
type countingKV struct {
	store.KV
	gets map[string]int
}

func (c *countingKV) Get(ctx context.Context, p string) (store.Node, error) {
	c.gets[p]++
	return c.KV.Get(ctx, p)
}

// TestTrustedFence: a trusted fence path is not read for the batch's own
// checks, the Flush still fails when it is gone, and a batch that deletes
// it sees its own delete.
func TestTrustedFence(t *testing.T) {
	ctx := context.Background()
	base := &countingKV{KV: memory.New(), gets: map[string]int{}}
	_ = base.Commit(ctx, store.Create("/ha/leader", nil))
	fence := store.Check("/ha/leader", store.AnyVersion)
	tx := txn.New(base)
	tx.Trust("/ha/leader")
	for i := range 3 {
		if err := tx.Commit(ctx, fence, store.Put(fmt.Sprintf("/s/%d", i), []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	if n := base.gets["/ha/leader"]; n != 0 {
		t.Fatalf("the trusted fence was read %d times", n)
	}
	if err := tx.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tx.Trust("/ha/leader")
	if err := tx.Commit(ctx, fence, store.Put("/s/late", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	if err := base.KV.Commit(ctx, store.Delete("/ha/leader", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Flush(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("flush behind a lost fence: %v", err)
	}
	if _, err := base.Get(ctx, "/s/late"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a write behind a lost fence reached the store")
	}
	_ = base.KV.Commit(ctx, store.Create("/ha/leader", nil))
	if err := tx.Commit(ctx, store.Delete("/ha", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, fence); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a check of a trusted path the batch deleted: %v", err)
	}
}

// TestTrustedVersionedFence: a trusted fence that names a version (an etcd
// term's) is not read either, and the Flush fails once the node moved to
// another version (a later term of the same node).
func TestTrustedVersionedFence(t *testing.T) {
	ctx := context.Background()
	base := &countingKV{KV: memory.New(), gets: map[string]int{}}
	_ = base.Commit(ctx, store.Create("/ha/leader", nil))
	fence := store.Check("/ha/leader", 0)
	tx := txn.New(base)
	tx.Trust("/ha/leader")
	if err := tx.Commit(ctx, fence, store.Put("/s/a", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	if n := base.gets["/ha/leader"]; n != 0 {
		t.Fatalf("the trusted fence was read %d times", n)
	}
	if err := tx.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tx.Trust("/ha/leader")
	if err := tx.Commit(ctx, fence, store.Put("/s/b", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	if err := base.KV.Commit(ctx, store.Set("/ha/leader", nil, 0)); err != nil { // the next term
		t.Fatal(err)
	}
	if err := tx.Flush(ctx); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("flush behind a fence of an older version: %v", err)
	}
	if _, err := base.Get(ctx, "/s/b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a write behind an older term's fence reached the store")
	}
}

package zk

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

// TestChainReplansWrongHints: a chain planned from a wrong belief (a node
// believed present that is not, one believed absent that is) is planned
// again from reads where it failed, and every batch is applied once, in
// order; the batches before the failed multi stay applied once.
func TestChainReplansWrongHints(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	if err := s.Commit(ctx, store.Create("/x", []byte("old"))); err != nil {
		t.Fatal(err)
	}
	lies := map[string]bool{"/a": true, "/x": false}
	hint := func(p string, _ bool) (bool, []string, bool) {
		v, ok := lies[p]
		return v, nil, ok
	}
	n, evs, err := s.CommitChain(ctx, hint, "/chain", [][]store.Op{
		{store.Create("/first", []byte("1"))},
		{store.Put("/a", []byte("new"))},
		{store.Put("/x", []byte("set"))},
		{store.Put("/a", []byte("again"))},
	})
	if err != nil || n != 4 || len(evs) != 4 {
		t.Fatalf("CommitChain = %d, %d, %v", n, len(evs), err)
	}
	for p, want := range map[string]string{"/first": "1@0", "/a": "again@1", "/x": "set@1"} {
		got, err := s.Get(ctx, p)
		if err != nil || fmt.Sprintf("%s@%d", got.Value, got.Version) != want {
			t.Errorf("%s = %+v, %v; want %s", p, got, err, want)
		}
	}
	if len(evs[1]) != 1 || evs[1][0].Path != "/a" || evs[1][0].Type != store.EventPut {
		t.Errorf("events of the second batch = %+v", evs[1])
	}
}

// TestChainNodeWraps: past chainWrap the chain node is deleted and created
// again inside the next multi, and the chain goes on; a chain whose node
// moved meanwhile (another writer) is planned again, not failed.
func TestChainNodeWraps(t *testing.T) {
	defer func(w int32) { chainWrap = w }(chainWrap)
	chainWrap = 2
	s := openTest(t, Options{})
	other := openTest(t, Options{Namespace: s.root[1:]})
	ctx := context.Background()
	for i := range 7 {
		batches := [][]store.Op{{store.Put("/n", []byte(fmt.Sprint(i)))}, {store.Put(fmt.Sprintf("/m%d", i), nil)}}
		if n, _, err := s.CommitChain(ctx, nil, "/c/chain", batches); err != nil || n != 2 {
			t.Fatalf("chain %d: %d, %v", i, n, err)
		}
		if i == 3 { // another writer moves the chain node
			if err := other.Commit(ctx, store.Put("/c/chain", nil)); err != nil {
				t.Fatal(err)
			}
		}
		c, err := s.Get(ctx, "/c/chain")
		if err != nil || c.Version > int64(chainWrap)+1 {
			t.Fatalf("chain node after chain %d: %+v, %v", i, c, err)
		}
	}
	n, err := s.Get(ctx, "/n")
	if err != nil || string(n.Value) != "6" || n.Version != 6 {
		t.Fatalf("/n = %+v, %v", n, err)
	}
	if _, err := s.Get(ctx, "/m6"); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.CommitChain(ctx, nil, "/", [][]store.Op{{store.Put("/z", nil)}})
	if !errors.Is(err, store.ErrBadPath) {
		t.Fatalf("a chain on the root: %v", err)
	}
}

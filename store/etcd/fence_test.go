package etcd

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

// A guarded commit carries its fence: the election key deleted by its
// lease's expiry (a write that is no commit of the store and moves no
// guard) between two links of a chained commit stops the chain there.
func TestFencedChainStopsWhenFenceFalls(t *testing.T) {
	m := startMembers(t, memberConfigs(t, 1))[0]
	ctx := t.Context()
	s := openStore(t, m.Endpoints(), Options{MaxTxnOps: 8})
	fence := "/ha/election/n_1"
	if err := s.Commit(ctx, store.Create("/ha", nil), store.Create("/ha/election", nil), store.Create(fence, nil)); err != nil {
		t.Fatal(err)
	}
	ops := []store.Op{store.Check(fence, store.AnyVersion)}
	for i := range 300 {
		ops = append(ops, store.Put(fmt.Sprintf("/e/%05d", i), []byte("v")))
	}
	s.afterChunk = func(i int) {
		if i == 1 {
			if _, err := s.cli.Delete(ctx, s.k.node(fence)); err != nil { // as a lease's expiry does
				t.Error(err)
			}
		}
	}
	if err := s.Commit(ctx, ops...); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a chain whose fence fell between its links: %v, want ErrConflict", err)
	}
	s.afterChunk = nil
	names, err := s.Children(ctx, "/e")
	if err != nil || len(names) == 0 || len(names) >= 300 {
		t.Fatalf("the chain applied %d of 300 writes (%v), want the links before the fence fell", len(names), err)
	}
	if err := s.Commit(ctx, ops...); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the same commit again: %v, want ErrNotFound (the plan's check)", err)
	}
}

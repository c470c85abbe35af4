package registry

import (
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// A fence that names its election node's version (an etcd term's) refuses
// the term's writes once a later term of the same node wrote it, as
// ErrFenced (not a conflict to retry), in a single commit and in a chain.
func TestFenceOfAnOlderTermOfTheNode(t *testing.T) {
	ctx := t.Context()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	if err := kv.Commit(ctx, store.Create("/ha/election/n-1", nil)); err != nil {
		t.Fatal(err)
	}
	r := New(kv)
	r.fence = func() []store.Op { return []store.Op{store.Check("/ha/election/n-1", 0)} }
	if err := r.Change().Launch("j", 0, task.Entry{TaskID: "t1", State: task.Staging}).Commit(ctx); err != nil {
		t.Fatalf("a write of the term: %v", err)
	}
	if err := kv.Commit(ctx, store.Set("/ha/election/n-1", nil, 0)); err != nil { // the next term of the node
		t.Fatal(err)
	}
	if err := r.Change().Launch("j", 1, task.Entry{TaskID: "t2", State: task.Staging}).Commit(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("a write of the older term: %v, want ErrFenced", err)
	}
	if _, err := r.CommitChanges(ctx, []*Change{r.Change().Launch("j", 2, task.Entry{TaskID: "t3", State: task.Staging})}); !errors.Is(err, ErrFenced) {
		t.Fatalf("a chained write of the older term: %v, want ErrFenced", err)
	}
}

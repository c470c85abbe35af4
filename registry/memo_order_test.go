package registry

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// TestReadyQueueMemoOrderIsTheFullOrder: whatever happens to the ready
// queue between reads (entries added, changed, written again unchanged,
// removed, damaged and repaired, in the default namespace and others), a
// read through the memo, which orders only what changed and merges it into
// the last read's order, gives exactly the queue a full read orders from
// scratch (ReadyQueue: every entry decoded, then sorted), entry for entry.
func TestReadyQueueMemoOrderIsTheFullOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		kv := memory.New()
		defer kv.Close()
		r := New(kv, Options{Damage: NewDamage(nil)})
		for i := range 2 {
			if err := kv.Commit(ctx, store.Put(fmt.Sprintf("%s/ns%d", NamespacesPath, i), nil)); err != nil {
				rt.Fatal(err)
			}
		}
		path := func(job int) string {
			if job%3 == 0 {
				return fmt.Sprintf("%s/job-%02d", ReadyPath, job)
			}
			return fmt.Sprintf("%s/ns%d%s/job-%02d", NamespacesPath, job%2, ReadyPath, job)
		}
		base := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
		var m QueueMemo
		for range rapid.IntRange(1, 12).Draw(rt, "reads") {
			var ops []store.Op
			for range rapid.IntRange(0, 30).Draw(rt, "changes") {
				p := path(rapid.IntRange(0, 40).Draw(rt, "job"))
				switch rapid.IntRange(0, 9).Draw(rt, "kind") {
				case 0, 1:
					ops = append(ops, store.Delete(p, store.AnyVersion))
				case 2:
					ops = append(ops, store.Put(p, []byte("{not json")))
				default: // few instants: ties ordered by the job's name
					since := base.Add(time.Duration(rapid.IntRange(0, 5).Draw(rt, "since")) * time.Second)
					ops = append(ops, store.Put(p, mustJSON(queue.Ready{Count: rapid.IntRange(1, 2).Draw(rt, "count"), Since: since})))
				}
			}
			for _, op := range ops { // one at a time: a delete of a missing node fails alone
				_ = kv.Commit(ctx, op)
			}
			got, err := r.Work().ReadyQueueMemo(ctx, &m)
			if err != nil {
				rt.Fatal(err)
			}
			want, err := r.Work().ReadyQueue(ctx)
			if err != nil {
				rt.Fatal(err)
			}
			if len(got) != len(want) {
				rt.Fatalf("memo read %d entries, full read %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(*got[i], want[i]) {
					rt.Fatalf("entry %d: memo %+v, full read %+v", i, *got[i], want[i])
				}
			}
		}
	})
}

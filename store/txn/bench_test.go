package txn_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/store/txn"
)

// BenchmarkStatusBatch stages what a batch of 256 ended tasks commits (a
// record put, the running entry deleted, each one commit) and flushes it,
// as the scheduler's status batches do.
func BenchmarkStatusBatch(b *testing.B) {
	const tasks = 256
	ctx := context.Background()
	base := memory.New()
	for b.Loop() {
		b.StopTimer()
		ops := make([]store.Op, 0, tasks)
		for i := range tasks {
			ops = append(ops, store.Put(fmt.Sprintf("/state/running/job-%03d/job-%03d@-@0", i, i), []byte(`{"taskId":"t"}`)))
		}
		if err := base.Commit(ctx, ops...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		tx := txn.New(base)
		for i := range tasks {
			if err := tx.Commit(ctx, store.Put(fmt.Sprintf("/state/trigger_keys/k%d", i), []byte(`{"done":true}`)),
				store.Delete(fmt.Sprintf("/state/running/job-%03d/job-%03d@-@0", i, i), store.AnyVersion)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
}

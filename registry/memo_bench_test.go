package registry

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// BenchmarkReadyQueueMemo reads a ready queue of 80,000 jobs of which 500
// changed since the last read (a large registry's backlog between two
// launch rounds), as the launcher does each round.
func BenchmarkReadyQueueMemo(b *testing.B) {
	ctx := context.Background()
	kv := memory.New()
	r := New(kv)
	const n = 80_000
	base := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var ops []store.Op
	for i := range n {
		ops = append(ops, store.Put(fmt.Sprintf("%s/job-%05d", ReadyPath, i), mustJSON(Ready{Count: 1, Since: base.Add(time.Duration(i%600) * time.Second)})))
		if len(ops) == 1000 {
			if err := kv.Commit(ctx, ops...); err != nil {
				b.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	var m QueueMemo
	if _, err := r.ReadyQueueMemo(ctx, &m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ops = ops[:0]
		for k := range 500 {
			j := (i*500 + k) % n
			ops = append(ops, store.Put(fmt.Sprintf("%s/job-%05d", ReadyPath, j), mustJSON(Ready{Count: 2, Since: base.Add(time.Duration(i) * time.Second)})))
		}
		if err := kv.Commit(ctx, ops...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		q, err := r.ReadyQueueMemo(ctx, &m)
		if err != nil || len(q) != n {
			b.Fatal(len(q), err)
		}
	}
}

package zk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// BenchmarkWatchFollows measures how fast a Watch follows a busy writer:
// each op is one commit of 32 changes (16 sets of existing nodes in
// directories of 100, 8 creates, 8 deletes of nodes created earlier) from
// 4 writers at once, and the clock stops when the watch has reported the
// last commit. It reports the events the watch delivered per second and
// how long after the writers' last commit the watch caught up (lag-ms): a
// watch slower than the writers shows as a lag growing with b.N.
func BenchmarkWatchFollows(b *testing.B) {
	s := openTest(b, Options{SessionTimeout: 10 * time.Second})
	ctx := context.Background()
	const dirs, per = 20, 100
	var ops []store.Op
	for d := range dirs {
		for i := range per {
			ops = append(ops, store.Put(fmt.Sprintf("/w/d%02d/n%03d", d, i), []byte("v")))
		}
		if err := s.Commit(ctx, ops...); err != nil {
			b.Fatal(err)
		}
		ops = ops[:0]
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Watch(wctx, "/w")
	if err != nil {
		b.Fatal(err)
	}
	var events atomic.Int64
	done := make(chan struct{})
	go func() {
		for ev := range ch {
			events.Add(1)
			if ev.Type == store.EventResync {
				b.Error("the watch fell behind and resynced")
			}
			if ev.Path == "/w/end" {
				close(done)
				for range ch {
				}
				return
			}
		}
	}()
	const writers = 4
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var made []string
			for i := w; i < b.N; i += writers {
				ops := make([]store.Op, 0, 32)
				seen := map[string]bool{}
				for len(ops) < 16 {
					p := fmt.Sprintf("/w/d%02d/n%03d", rng.IntN(dirs), rng.IntN(per))
					if !seen[p] {
						seen[p] = true
						ops = append(ops, store.Put(p, fmt.Appendf(nil, "%d", i)))
					}
				}
				for k := range 8 {
					p := fmt.Sprintf("/w/d%02d/x%d-%d-%d", rng.IntN(dirs), w, i, k)
					ops = append(ops, store.Create(p, []byte("x")))
					made = append(made, p)
				}
				for len(made) > 64 && len(ops) < 32 {
					ops = append(ops, store.Delete(made[0], store.AnyVersion))
					made = made[1:]
				}
				if err := s.Commit(ctx, ops...); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wrote := b.Elapsed()
	if err := s.Commit(ctx, store.Put("/w/end", nil)); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatal("the watch did not report the last commit in 5 minutes")
	}
	b.StopTimer()
	b.ReportMetric(float64(events.Load())/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64((b.Elapsed() - wrote).Milliseconds()), "lag-ms")
}

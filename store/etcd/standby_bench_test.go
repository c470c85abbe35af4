package etcd_test

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// plainKV hides the backing store's store.Revisioned: the cache then
// re-reads every node another process changed, as on ZooKeeper.
type plainKV struct{ store.KV }

// BenchmarkStandbyFollowsEtcd drives changes through a 3-member embedded
// etcd cluster (a writer on member 0, 64 puts of 100 bytes per commit
// over 6,400 nodes) while a standby's cache follows /state through
// member 1: "reread" as before (a linearizable Get per changed node),
// "values" applying the watch events' values. It reports the process's
// CPU (every member, the writer and the standby together; the runs differ
// only in the standby's work) per change, and the standby copy's lag
// behind each event's arrival (p50, p99). Run with -count to alternate.
func BenchmarkStandbyFollowsEtcd(b *testing.B) {
	cl := etcdtest.Start(b, 3)
	open := func(ep string) *etcd.Store {
		s, err := etcd.Open(b.Context(), etcd.Options{Endpoints: []string{ep}})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	eps := cl.Endpoints()
	writer := open(eps[0])
	b.Cleanup(func() { _ = writer.Close() })
	value := make([]byte, 100)
	commit := func(n int) {
		ops := make([]store.Op, 64)
		for i := range ops {
			ops[i] = store.Put(fmt.Sprintf("/state/bench/d%d/n%04d", i%8, (n%100)*64+i), value)
		}
		if err := writer.Commit(b.Context(), ops...); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		commit(i)
	}
	for _, mode := range []string{"reread", "values"} {
		b.Run(mode, func(b *testing.B) {
			var back store.KV = open(eps[1])
			if mode == "reread" {
				back = plainKV{back}
			}
			c, err := cache.Open(b.Context(), back, cache.Options{Roots: []string{"/state"}})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var mu sync.Mutex
			var lags []time.Duration
			c.ObserveLag(func(d time.Duration) { mu.Lock(); lags = append(lags, d); mu.Unlock() })
			marker := "/state/bench-end"
			w, err := c.Watch(b.Context(), marker)
			if err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuTime()
			n := 0
			for b.Loop() {
				commit(n)
				n++
			}
			if err := writer.Commit(b.Context(), store.Put(marker, []byte(mode))); err != nil {
				b.Fatal(err)
			}
			for ev := range w { // the standby has applied every change before it
				if ev.Path == marker && ev.Type == store.EventPut {
					break
				}
			}
			cpu := cpuTime() - cpu0
			mu.Lock()
			slices.Sort(lags)
			if len(lags) > 0 {
				b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "lag-p50-ms")
				b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "lag-p99-ms")
			}
			mu.Unlock()
			b.ReportMetric(float64(cpu.Microseconds())/float64(n*64), "cpu-us/change")
			b.ReportMetric(float64(n*64)/b.Elapsed().Seconds(), "changes/s")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

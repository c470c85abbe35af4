package replog

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// benchEvents records n executions (5 rows' events each) on w.
func benchEvents(w *trace.Writer, from, n int) {
	for i := from; i < from+n; i++ {
		tid := fmt.Sprintf("bench@-@%d@-@READY@-@slave@-@%d", i%8, i)
		at := t0.Add(time.Duration(i) * time.Millisecond)
		for _, st := range []string{"TASK_STAGING", "TASK_RUNNING", "TASK_FINISHED"} {
			w.Record(trace.StatusTrace{ID: trace.NewID(tid, st), JobName: "bench", TaskID: tid, State: "TASK_FINISHED", Source: "CLOUD_SCHEDULER",
				ExecutionType: "READY", ShardingItem: "0", CreationTime: at})
		}
		id := trace.NewID(tid, "exec")
		w.Record(trace.ExecutionStart{ID: id, JobName: "bench", TaskID: tid, ExecutionSource: "NORMAL_TRIGGER", StartTime: at})
		w.Record(trace.ExecutionComplete{ID: id, JobName: "bench", TaskID: tid, ExecutionSource: "NORMAL_TRIGGER", StartTime: at,
			CompleteTime: at.Add(time.Second), Success: true})
	}
}

// BenchmarkHistoryDirect: history events through the trace writer into
// its own SQLite (the one-machine shape); events/s.
func BenchmarkHistoryDirect(b *testing.B) {
	dir := b.TempDir()
	w, err := trace.Open(context.Background(), trace.Options{DSN: filepath.Join(dir, "h.db"), SpoolDir: filepath.Join(dir, "spool"), Clock: clock.NewFake(t0)})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	const per = 2000
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		benchEvents(w, i*per, per)
		if err := w.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*per*5)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkHistoryReplicated: the same events published by one replica
// of a three-member embedded cluster and applied by all three to their
// SQLite; events/s until the last replica has applied them.
func BenchmarkHistoryReplicated(b *testing.B) {
	c := etcdtest.Start(b, 3)
	rs := startReplicas(b, c, Options{AckInterval: time.Second})
	const per = 2000
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		benchEvents(rs[0].w, i*per, per)
		flushAll(b, rs)
	}
	b.ReportMetric(float64(b.N*per*5)/time.Since(start).Seconds(), "events/s")
	_ = ctx
}

func startReplicas(t testing.TB, c *etcdtest.Cluster, o Options) []*replica {
	names := []string{"m0", "m1", "m2"}
	rs := make([]*replica, 3)
	for i := range rs {
		dir := t.TempDir()
		rs[i] = &replica{name: names[i], db: filepath.Join(dir, "h.db"), spool: filepath.Join(dir, "spool"), cli: c.Client(c.Configs[i].ClientURL)}
		startReplicaTB(t, rs[i], names, o)
		t.Cleanup(rs[i].stopTB)
	}
	return rs
}

// flushAll publishes what rs[0] recorded and waits for every replica.
func flushAll(t testing.TB, rs []*replica) {
	ctx := context.Background()
	flushRetry(t, rs[0])
	rev, err := rs[0].log.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := r.log.WaitApplied(ctx, rev); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDayOfHistorySize (a measurement, run with EJ_DAY=1): a simulated
// day of fires (one execution a second: 86,400 executions, 432,000
// events) through the log of a three-member cluster, pruned as it goes,
// then compacted and defragmented: the store's size on disk.
func TestDayOfHistorySize(t *testing.T) {
	if testing.Short() || !dayRun() {
		t.Skip("a measurement: EJ_DAY=1 go test -run TestDayOfHistorySize ./history/replog")
	}
	c := etcdtest.Start(t, 3)
	rs := startReplicas(t, c, Options{AckInterval: -1})
	ctx := context.Background()
	start := time.Now()
	const total, per = 86_400, 3_600 // an hour of fires per flush
	for i := 0; i < total; i += per {
		benchEvents(rs[0].w, i, per)
		flushAll(t, rs)
		for _, r := range rs {
			if err := r.log.ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := rs[0].log.Prune(ctx); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	st, err := etcd.Open(ctx, etcd.Options{Client: rs[0].cli})
	if err != nil {
		t.Fatal(err)
	}
	a := etcd.NewAdmin(st)
	before, _ := a.Statuses(ctx)
	resp, _ := rs[0].cli.Get(ctx, "x", clientv3.WithCountOnly())
	if _, err := rs[0].cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	m := &etcd.Maintenance{Admin: a, MinFree: 1, FreeRatio: 0.0001}
	if _, err := m.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := a.Statuses(ctx)
	t.Logf("a day: %d executions, %d events in %v (%.0f events/s through 3 replicas)", total, total*5, elapsed.Round(time.Millisecond), float64(total*5)/elapsed.Seconds())
	for i := range before {
		t.Logf("%s: before compaction %.1f MiB (in use %.1f MiB); after compaction and defrag %.2f MiB (in use %.2f MiB)", before[i].Name,
			float64(before[i].DBSize)/(1<<20), float64(before[i].DBInUse)/(1<<20), float64(after[i].DBSize)/(1<<20), float64(after[i].DBInUse)/(1<<20))
	}
}

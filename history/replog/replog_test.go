package replog

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
	"github.com/ejcloud/elasticjob/task"
)

const failsafe = 60 * time.Second

var t0 = time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	t.Cleanup(cancel)
	return ctx
}

// replica is one scheduler's history: a trace writer whose batches go to
// the log, and the log applied to its own SQLite.
type replica struct {
	name   string
	db     string // SQLite file
	spool  string
	cli    *clientv3.Client
	w      *trace.Writer
	log    *Log
	cancel context.CancelFunc
	done   chan struct{}
}

func startReplica(t *testing.T, r *replica, replicas []string, o Options) {
	t.Helper()
	o.AckInterval = -1
	startReplicaTB(t, r, replicas, o)
}

func startReplicaTB(t testing.TB, r *replica, replicas []string, o Options) {
	t.Helper()
	o.Client, o.Name, o.Replicas = r.cli, r.name, replicas
	// The log's own clock is real: after a failed watch (a member lost
	// its raft leader) it reads again after a backoff. The writer's is
	// fake: the tests publish with Flush.
	o.Clock = clock.Real{}
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	// The writer's clock is fake, so a first connection that timed out would
	// never be retried: the bounds are generous for a loaded machine (the
	// SQLite file's migrations run inside the connect).
	w, err := trace.Open(context.Background(), trace.Options{DSN: r.db, SpoolDir: r.spool, Sink: l, Clock: clock.NewFake(t0),
		WriteTimeout: 30 * time.Second, ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(w); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.w, r.log, r.cancel, r.done = w, l, cancel, make(chan struct{})
	go func() { defer close(r.done); l.Run(ctx) }()
}

func (r *replica) stop(*testing.T) { r.stopTB() }

func (r *replica) stopTB() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r.w.Close(ctx)
	r.cancel = nil
}

// events are the rows' events of n executions (staging, running,
// finished traces, a start and a completion) of term, and one audit row
// of replica name.
func events(name, term string, n int) []trace.Event {
	var evs []trace.Event
	for i := range n {
		tid := fmt.Sprintf("job%s@-@0@-@READY@-@slave@-@%d", term, i)
		at := t0.Add(time.Duration(i) * time.Second)
		for k, st := range []task.State{"TASK_STAGING", "TASK_RUNNING", "TASK_FINISHED"} {
			evs = append(evs, trace.StatusTrace{ID: trace.NewID(tid, string(st)), JobName: "job" + term, TaskID: tid, State: st,
				Source: "CLOUD_SCHEDULER", ExecutionType: "READY", ShardingItem: "0", CreationTime: at.Add(time.Duration(k) * time.Millisecond)})
		}
		id := trace.NewID(tid, "exec")
		evs = append(evs, trace.ExecutionStart{ID: id, JobName: "job" + term, TaskID: tid, ExecutionSource: "NORMAL_TRIGGER", StartTime: at},
			trace.ExecutionComplete{ID: id, JobName: "job" + term, TaskID: tid, ExecutionSource: "NORMAL_TRIGGER",
				StartTime: at, CompleteTime: at.Add(time.Second), Success: true})
	}
	return append(evs, trace.Audit{ID: trace.NewID("audit", term, name), CreationTime: t0, User: "admin", Role: "admin",
		Method: "POST", Route: "/api/job", Target: "job" + term, Status: 200})
}

// record records events(r.name, term, n) on r.
func record(r *replica, term string, n int) {
	for _, ev := range events(r.name, term, n) {
		r.w.Record(ev)
	}
}

// rows dumps every history table of r's database, in ID order.
func rows(t *testing.T, r *replica) []string {
	t.Helper()
	db, err := r.w.QueryDB()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, q := range []string{
		"SELECT id || '|' || job_name || '|' || task_id || '|' || state || '|' || creation_time FROM JOB_STATUS_TRACE_LOG ORDER BY id",
		"SELECT id || '|' || job_name || '|' || task_id || '|' || is_success || '|' || start_time || '|' || IFNULL(complete_time, '') FROM JOB_EXECUTION_LOG ORDER BY id",
		"SELECT id || '|' || user_name || '|' || target FROM AUDIT_LOG ORDER BY id",
	} {
		var got []string
		if err := db.SelectContext(ctxT(t), &got, q); err != nil {
			t.Fatal(err)
		}
		out = append(out, got...)
	}
	return out
}

func waitAll(t *testing.T, at int64, rs ...*replica) {
	t.Helper()
	for _, r := range rs {
		if err := r.log.WaitApplied(ctxT(t), at); err != nil {
			t.Fatal(err)
		}
	}
}

func flush(t *testing.T, r *replica) int64 {
	t.Helper()
	flushRetry(t, r)
	rev, err := r.log.Revision(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestReplicatedHistory: rows written under one term, a leader change
// (the first writer's member killed, with events it spooled but could not
// publish), rows under the next term, the killed replica back: every
// replica's SQLite holds every row, identically.
func TestReplicatedHistory(t *testing.T) {
	c := etcdtest.Start(t, 3)
	names := []string{"m0", "m1", "m2"}
	rs := make([]*replica, 3)
	for i := range rs {
		dir := t.TempDir()
		rs[i] = &replica{name: names[i], db: filepath.Join(dir, "history.db"), spool: filepath.Join(dir, "spool"),
			cli: c.Client(c.Configs[i].ClientURL)}
		startReplica(t, rs[i], names, Options{})
		t.Cleanup(func() { rs[i].stop(t) })
	}
	// Term 1: the replica beside the raft leader leads the schedulers.
	old := c.Leader()
	if old < 0 {
		t.Fatal("no raft leader")
	}
	next, other := (old+1)%3, (old+2)%3
	record(rs[old], "a", 40)
	record(rs[other], "audit-only", 0) // an audit answered by a standby
	rev := max(flush(t, rs[old]), flush(t, rs[other]))
	waitAll(t, rev, rs...)

	// Its events spooled but not published when its member dies (the
	// raft leader: etcd elects another as the schedulers do).
	record(rs[old], "b", 10)
	if err := rs[old].w.Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	c.Kill(old)
	rs[old].stop(t)

	// Term 2: the next replica leads.
	record(rs[next], "c", 40)
	rev = flush(t, rs[next])
	waitAll(t, rev, rs[next], rs[other])

	// The old leader back: its spool replays (term b) and it catches up
	// (term c).
	c.Restart(old)
	rs[old].cli = c.Client(c.Configs[old].ClientURL)
	startReplica(t, rs[old], names, Options{})
	rev = flush(t, rs[old])
	waitAll(t, rev, rs...)

	want := rows(t, rs[next])
	// 90 executions × (3 traces + 1 execution row) + 4 audits
	if len(want) != 90*4+4 {
		t.Fatalf("%s holds %d rows, want %d", rs[next].name, len(want), 90*4+4)
	}
	for _, r := range []*replica{rs[old], rs[other]} {
		if got := rows(t, r); !slices.Equal(got, want) {
			t.Errorf("%s holds %d rows, %s %d; they differ", r.name, len(got), rs[next].name, len(want))
		}
	}

	// Every replica applied everything: pruning empties the log.
	for _, r := range rs {
		if err := r.log.ack(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := rs[1].log.Prune(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	left, err := rs[1].cli.Get(ctxT(t), rs[1].log.logPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || left.Count != 0 {
		t.Errorf("prune deleted %d entries and left %d, want all applied entries deleted", n, left.Count)
	}
}

// TestReplicaDownCatchesUp: a replica stopped while entries come in
// (more than a page of them, with its member alive) reads them on start,
// and pruning waits for it.
func TestReplicaDownCatchesUp(t *testing.T) {
	c := etcdtest.Start(t, 3)
	names := []string{"m0", "m1"}
	rs := make([]*replica, 2)
	for i := range rs {
		dir := t.TempDir()
		rs[i] = &replica{name: names[i], db: filepath.Join(dir, "history.db"), spool: filepath.Join(dir, "spool"),
			cli: c.Client(c.Configs[i].ClientURL)}
		startReplica(t, rs[i], names, Options{PageSize: 3})
		t.Cleanup(func() { rs[i].stop(t) })
	}
	rs[1].stop(t)
	for k := range 10 {
		record(rs[0], fmt.Sprint("t", k), 5)
		flush(t, rs[0])
	}
	if _, err := rs[0].log.Prune(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	left, err := rs[0].cli.Get(ctxT(t), rs[0].log.logPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if left.Count < 10 {
		t.Fatalf("prune left %d entries while m1 is behind, want the 10 it has not applied", left.Count)
	}
	startReplica(t, rs[1], names, Options{PageSize: 3})
	rev := flush(t, rs[0])
	waitAll(t, rev, rs...)
	if a, b := rows(t, rs[0]), rows(t, rs[1]); !slices.Equal(a, b) || len(a) != 10*(5*4+1) {
		t.Fatalf("m0 %d rows, m1 %d rows, want %d each and equal", len(a), len(b), 10*(5*4+1))
	}
}

// TestBound: past MaxEntries the oldest entries go even if a replica has
// not applied them; the floor records it and that replica counts a gap.
func TestBound(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client()
	dir := t.TempDir()
	r := &replica{name: "m0", db: filepath.Join(dir, "history.db"), spool: filepath.Join(dir, "spool"), cli: cli}
	startReplica(t, r, []string{"m0", "gone"}, Options{MaxEntries: 5})
	t.Cleanup(func() { r.stop(t) })
	for k := range 12 {
		record(r, fmt.Sprint("t", k), 1)
		flush(t, r)
	}
	if _, err := r.log.Prune(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctxT(t), r.log.logPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 5 {
		t.Fatalf("%d entries after prune, want the bound 5", resp.Count)
	}
	// A replica starting from nothing finds the floor above its position.
	l, err := New(Options{Client: cli, Name: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.checkFloor(ctxT(t), 0); err != nil {
		t.Fatal(err)
	}
	if got := testutilCount(l.m.gaps); got != 1 {
		t.Errorf("gaps = %v, want 1", got)
	}
}

// sums are a replica's task results statistics: the minute table's
// successes and failures, and the hour table's.
func sums(t *testing.T, r *replica) [4]int64 {
	t.Helper()
	db, err := r.w.QueryDB()
	if err != nil {
		t.Fatal(err)
	}
	var out [4]int64
	for i, table := range []string{"TASK_RESULT_STATISTICS_MINUTE", "TASK_RESULT_STATISTICS_HOUR"} {
		if err := db.QueryRowContext(ctxT(t), "SELECT COALESCE(SUM(success_count), 0), COALESCE(SUM(failed_count), 0) FROM "+table).Scan(&out[2*i], &out[2*i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestResultCounts: with CountResults every replica counts each task
// result once, from the traces it applies: a batch published twice adds
// nothing, and an hour already rolled up gets the late results too.
func TestResultCounts(t *testing.T) {
	c := etcdtest.Start(t, 3)
	rs := startReplicas(t, c, Options{AckInterval: -1, CountResults: true, Location: time.UTC})
	for _, r := range rs { // the collector rolled the hour up already
		db, err := r.w.QueryDB()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctxT(t), "INSERT INTO TASK_RESULT_STATISTICS_HOUR (success_count, failed_count, statistics_time, creation_time, namespace) VALUES (0, 0, ?, ?, 'default')",
			r.w.TimeArg(t0), r.w.TimeArg(t0)); err != nil {
			t.Fatal(err)
		}
	}
	evs := events("m0", "x", 10)
	evs = append(evs, trace.StatusTrace{ID: "failed-1", JobName: "jobx", TaskID: "jobx@-@1@-@READY@-@slave@-@1", State: "TASK_FAILED", CreationTime: t0},
		trace.StatusTrace{ID: "killed-1", JobName: "jobx", TaskID: "jobx@-@2@-@READY@-@slave@-@1", State: "TASK_KILLED", CreationTime: t0})
	for _, ev := range evs {
		rs[0].w.Record(ev)
	}
	flushAll(t, rs)
	want := [4]int64{10, 1, 10, 1}
	for _, r := range rs {
		if got := sums(t, r); got != want {
			t.Errorf("%s: minute and hour sums %v, want %v", r.name, got, want)
		}
	}
	if err := rs[1].log.Publish(ctxT(t), evs); err != nil { // published again
		t.Fatal(err)
	}
	rev, _ := rs[1].log.Revision(ctxT(t))
	waitAll(t, rev, rs...)
	for _, r := range rs {
		if got := sums(t, r); got != want {
			t.Errorf("%s after a batch published twice: sums %v, want %v", r.name, got, want)
		}
	}
}

// flushRetry publishes what r recorded; a publish that fails while the
// cluster elects a raft leader (etcdserver: request timed out) is tried
// again, each attempt bounded by the writer's WriteTimeout.
func flushRetry(t testing.TB, r *replica) {
	t.Helper()
	var err error
	for range 10 {
		if err = r.w.Flush(context.Background()); err == nil {
			return
		}
	}
	t.Fatal(err)
}

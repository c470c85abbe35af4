package scheduler

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/heapbench"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
)

func (r *rig) waiting() map[string]queue.Wait {
	r.t.Helper()
	m, err := r.reg.Work().WaitingReasons(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

// round runs a launch round now and another once the reasons may be
// recorded.
func (r *rig) round() {
	r.sched.launcher.round(r.ctx)
	r.clk.Advance(waitRecordAfter)
	r.sched.launcher.round(r.ctx)
}

// TestWaitingReasonsAreRecorded: a shard larger than any agent, a gang
// larger than the cluster, and work behind a running execution each get
// a reason in words, recorded once they waited a moment and forgotten
// once they launch.
func TestWaitingReasonsAreRecorded(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "huge"; j.ShardingTotalCount = 1; j.CPUCount = 64 })
	r.addJob(func(j *jobs.Config) { j.JobName = "gang"; j.ShardingTotalCount = 3; j.CPUCount = 2 })
	r.trigger("huge")
	r.trigger("gang")
	r.offer("o1", 4, 4096)
	r.sched.launcher.round(r.ctx)
	if len(r.waiting()) != 0 {
		t.Fatal("reasons recorded before the entries waited a moment")
	}
	r.offer("o2", 4, 4096)
	r.clk.Advance(waitRecordAfter)
	r.sched.launcher.round(r.ctx)
	got := r.waiting()
	huge, gang := got["ready/huge"], got["ready/gang"]
	if huge.Reason != queue.WaitTooLarge || !strings.Contains(huge.Message, "a shard needs 65 CPUs") || !strings.Contains(huge.Message, "the cluster has 4 CPUs and 4096 MB on its one agent") {
		t.Fatalf("huge: %+v", huge)
	}
	if gang.Reason != queue.WaitTooLarge || !strings.Contains(gang.Message, "it needs 7 CPUs and 320 MB: 6 CPUs and 192 MB for the 3 shards, 1 CPU and 128 MB for the app's executor") {
		t.Fatalf("gang: %+v", gang)
	}
	if !huge.Since.Equal(t0) {
		t.Fatalf("since %v, want when it was first seen waiting", huge.Since)
	}

	// The gang fits once more resources are offered: launched, its reason goes.
	r.offer("o3", 8, 4096)
	r.sched.launcher.round(r.ctx)
	r.clk.Advance(waitRecordEvery)
	r.sched.launcher.round(r.ctx)
	got = r.waiting()
	if _, ok := got["ready/gang"]; ok || len(r.running("gang")) != 3 {
		t.Fatalf("after the gang launched: waiting %+v, running %d", got, len(r.running("gang")))
	}
	// A new execution waits for the running one.
	r.trigger("gang")
	r.round()
	if w := r.waiting()["ready/gang"]; w.Reason != queue.WaitRunning || !strings.Contains(w.Message, "still running (3 shards)") {
		t.Fatalf("behind the running execution: %+v", w)
	}
	if _, ok := r.waiting()["ready/huge"]; !ok {
		t.Fatal("the huge job's reason was dropped while it still waits")
	}
}

func TestWaitingWithoutOffersAndWhileReconciling(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "j"; j.ShardingTotalCount = 1 })
	r.trigger("j")
	r.round()
	if w := r.waiting()["ready/j"]; w.Reason != queue.WaitNoOffers {
		t.Fatalf("no offers: %+v", w)
	}
	// A reconciliation of another job's task holds nothing of j's (nothing of it runs).
	r.sched.st.awaiting = map[string]bool{"t": true}
	r.sched.st.awaitUntil = r.clk.Now().Add(time.Minute)
	r.clk.Advance(waitRecordEvery)
	r.sched.launcher.round(r.ctx)
	if w := r.waiting()["ready/j"]; w.Reason != queue.WaitNoOffers {
		t.Fatalf("reconciling another job's task: %+v", w)
	}
	if err := r.reg.Config().DeleteJob(r.ctx, "j"); err != nil {
		t.Fatal(err)
	}
	if len(r.waiting()) != 0 {
		t.Fatal("deleting the job left its reason")
	}
}

// TestMessageOnlyRefreshesAreBounded: a changed reason is always written;
// a changed message alone is rewritten for at most waitRefreshPerCommit
// entries a commit, the longest unwritten first, the rest in later ones.
func TestMessageOnlyRefreshesAreBounded(t *testing.T) {
	r := newRig(t)
	ws := &r.sched.launcher.waits.ws
	ws.entries, ws.loaded = map[string]waitEntry{}, true
	now := r.clk.Now()
	const n = waitRefreshPerCommit + 100
	waiting := map[string]queue.Wait{}
	for i := range n {
		k := queue.WaitKey(false, fmt.Sprintf("job-%04d", i), 0)
		since := now.Add(-time.Hour)
		ws.setRecord(k, queue.Wait{Reason: queue.WaitBehind, Message: "old figures", Since: since},
			now.Add(-waitRefresh-time.Duration(i)*time.Millisecond)) // job-0000 written last
		e := ws.entries[k]
		e.since = since.UnixNano()
		ws.entries[k] = e
		waiting[k] = queue.Wait{Reason: queue.WaitBehind, Message: "new figures"}
	}
	changed := queue.WaitKey(false, "job-0000", 0)
	waiting[changed] = queue.Wait{Reason: queue.WaitCPU, Message: "not enough CPU"}
	gone := queue.WaitKey(false, "gone", 0)
	ws.setRecord(gone, queue.Wait{Reason: queue.WaitBehind}, now)

	keys, puts, _ := r.sched.launcher.waits.waitingKeys(waiting, nil, now, 0)
	if len(puts) != waitRefreshPerCommit+1 || len(keys) != len(puts)+1 {
		t.Fatalf("%d puts, %d keys; want %d puts and one delete", len(puts), len(keys), waitRefreshPerCommit+1)
	}
	if puts[changed].Reason != queue.WaitCPU {
		t.Fatalf("the changed reason was not written: %+v", puts[changed])
	}
	oldest := queue.WaitKey(false, fmt.Sprintf("job-%04d", n-1), 0)
	if _, ok := puts[oldest]; !ok {
		t.Fatal("the longest unwritten entry was not refreshed")
	}
	if _, ok := puts[queue.WaitKey(false, "job-0001", 0)]; ok {
		t.Fatal("the most recently written entry was refreshed before older ones")
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Fatalf("keys out of path order at %d", i)
		}
	}
}

// TestBehindWorkChurnIsRefreshedNotRewritten: an entry waiting behind other work that a
// round finds behind a reservation with new holders, or behind older work again, is not
// rewritten at once (a backlog past the round's bound flips so every round) but refreshed
// as a changed message is; a change to any other reason is written at once.
func TestBehindWorkChurnIsRefreshedNotRewritten(t *testing.T) {
	r := newRig(t)
	ws := &r.sched.launcher.waits.ws
	ws.entries, ws.loaded = map[string]waitEntry{}, true
	now := r.clk.Now()
	since := now.Add(-time.Hour)
	holder := func(job string) []queue.Holder { return []queue.Holder{{Job: job, Shards: 1}} }
	rec := func(key string, w queue.Wait, writtenAt time.Time) {
		w.Since = since
		ws.setRecord(key, w, writtenAt)
		e := ws.entries[key]
		e.since = since.UnixNano()
		ws.entries[key] = e
	}
	flipped, reheld, fresh, cpu, old := queue.WaitKey(false, "flipped", 0), queue.WaitKey(false, "reheld", 0),
		queue.WaitKey(false, "fresh", 0), queue.WaitKey(false, "cpu", 0), queue.WaitKey(false, "old", 0)
	rec(flipped, queue.Wait{Reason: queue.WaitBehind, Message: "behind"}, now)
	rec(reheld, queue.Wait{Reason: queue.WaitReservation, Message: "held", Holders: holder("a")}, now)
	rec(fresh, queue.Wait{Reason: queue.WaitReservation, Message: "held", Holders: holder("a")}, now)
	rec(cpu, queue.Wait{Reason: queue.WaitReservation, Message: "held", Holders: holder("a")}, now)
	rec(old, queue.Wait{Reason: queue.WaitBehind, Message: "behind"}, now.Add(-waitRefresh))
	waiting := map[string]queue.Wait{
		flipped: {Reason: queue.WaitReservation, Message: "held", Holders: holder("b")},
		reheld:  {Reason: queue.WaitReservation, Message: "held", Holders: holder("b")},
		fresh:   {Reason: queue.WaitBehind, Message: "behind"},
		cpu:     {Reason: queue.WaitCPU, Message: "not enough CPU"},
		old:     {Reason: queue.WaitReservation, Message: "held", Holders: holder("b")},
	}
	_, puts, _ := r.sched.launcher.waits.waitingKeys(waiting, nil, now, 0)
	for _, k := range []string{flipped, reheld, fresh} {
		if _, ok := puts[k]; ok {
			t.Errorf("%s rewritten at once for a change between waits behind other work: %+v", k, puts[k])
		}
	}
	if puts[cpu].Reason != queue.WaitCPU {
		t.Errorf("a change to another reason was not written at once: %+v", puts[cpu])
	}
	if w := puts[old]; w.Reason != queue.WaitReservation || len(w.Holders) != 1 || w.Holders[0].Job != "b" {
		t.Errorf("an entry written waitRefresh ago was not refreshed: %+v", w)
	}
}

// TestWaitingCommitsAreBounded: a commit of reasons holds at most
// 2 × MaxRoundTasks ops, entries no longer waiting first; the rest follow in
// the next commits until every reason is recorded.
func TestWaitingCommitsAreBounded(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.MaxRoundTasks = 2 // 4 ops a commit
	gone := queue.WaitKey(false, "gone", 0)
	if err := r.reg.Change().Wait(gone, queue.Wait{Reason: queue.WaitBehind, Since: t0}).Commit(r.ctx); err != nil {
		t.Fatal(err)
	}
	ws := &r.sched.launcher.waits.ws
	ws.entries, ws.loaded = map[string]waitEntry{}, true
	ws.setRecord(gone, queue.Wait{Reason: queue.WaitBehind, Since: t0}, t0)
	const n = 10
	waiting := map[string]queue.Wait{}
	for i := range n {
		k := queue.WaitKey(false, fmt.Sprintf("job-%02d", i), 0)
		waiting[k] = queue.Wait{Reason: queue.WaitCPU, Message: "not enough CPU"}
		ws.entries[k] = waitEntry{since: r.clk.Now().Add(-time.Minute).UnixNano()} // waited long enough to be recorded
	}
	r.sched.launcher.waits.record(r.ctx, waiting, nil)
	got := r.waiting()
	if _, ok := got[gone]; ok {
		t.Fatal("the entry no longer waiting was not deleted first")
	}
	if len(got) != 2*r.sched.deps.Options.MaxRoundTasks-1 {
		t.Fatalf("%d reasons after the first commit, want %d (one op was the delete)", len(got), 2*r.sched.deps.Options.MaxRoundTasks-1)
	}
	for range n {
		r.clk.Advance(waitRecordEvery)
		r.sched.launcher.waits.record(r.ctx, waiting, nil)
	}
	if got := r.waiting(); len(got) != n {
		t.Fatalf("%d reasons recorded in the end, want %d", len(got), n)
	}
}

// BenchmarkWaitingState: what the scheduler keeps of 80,000 entries that
// wait and are recorded (a large backlog, waiting for resources another
// job holds), per entry: a summary of each record (recSum), the record
// itself being in the registry's copy.
func BenchmarkWaitingState(b *testing.B) {
	const n = 80_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = queue.WaitKey(false, fmt.Sprintf("sim-%06d", i), 0)
	}
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		before := heapbench.Live()
		ws := &waitState{entries: map[string]waitEntry{}}
		for i, k := range keys {
			ws.entries[k] = waitEntry{since: now.UnixNano()}
			// as a round words them: a message and a holder of its own
			rec := queue.Wait{Reason: queue.WaitCPU, Message: fmt.Sprintf("needs 1 CPU; the largest offer has 0.5 (round %d)", i%50), Since: now,
				Holders: []queue.Holder{{Job: fmt.Sprintf("sim-%06d", (i+1)%n), Shards: 1, TaskID: fmt.Sprintf("sim-%06d@-@0@-@READY@-@agent@-@%d", i, i)}}}
			ws.setRecord(k, rec, now)
		}
		b.ReportMetric(float64(heapbench.Live()-before)/n, "heap-B/entry")
		runtime.KeepAlive(ws)
	}
}

// BenchmarkWaitingKeys: one commit's selection over a backlog of 90,000
// recorded entries whose reason changed (every one a put), bounded to a
// commit of 4,096 ops: what a pass allocates (B/op; per entry of the
// backlog, alloc-B/entry) and its CPU.
func BenchmarkWaitingKeys(b *testing.B) {
	const n, max = 90_000, 4096
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	r := &waitRecorder{alarm: newAlarm(clock.NewFake(now)), ws: waitState{entries: map[string]waitEntry{}}}
	waiting := make(map[string]queue.Wait, n)
	for i := range n {
		k := queue.WaitKey(false, fmt.Sprintf("sim-%06d", i), 0)
		r.ws.entries[k] = waitEntry{since: now.Add(-time.Minute).UnixNano()}
		r.ws.setRecord(k, queue.Wait{Reason: queue.WaitBehind, Message: "behind", Since: now.Add(-time.Minute)}, now.Add(-time.Second))
		waiting[k] = queue.Wait{Reason: queue.WaitCPU, Message: "needs 1 CPU"}
	}
	b.ReportAllocs()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		keys, _, more := r.waitingKeys(waiting, nil, now, max)
		if len(keys) != max || !more {
			b.Fatalf("%d keys, more %t", len(keys), more)
		}
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N)/n, "alloc-B/entry")
}

// maxWaitingStatePerEntry bounds what the recorder keeps per recorded
// entry (BenchmarkWaitingState measured 157 B; 472 B while it kept each
// record whole).
const maxWaitingStatePerEntry = 250

// TestWaitingStateIsCompact: what the recorder keeps of a backlog of
// recorded reasons, each with its own message and holder, stays within its
// bound per entry, and a commit's pick over it allocates about what it
// writes, not a copy of every changed entry.
func TestWaitingStateIsCompact(t *testing.T) {
	if testing.Short() {
		t.Skip("records 40,000 reasons")
	}
	const n, max = 40_000, 1024
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = queue.WaitKey(false, fmt.Sprintf("sim-%06d", i), 0)
	}
	before := heapbench.Live()
	r := &waitRecorder{alarm: newAlarm(clock.NewFake(now)), ws: waitState{entries: map[string]waitEntry{}}}
	for i, k := range keys {
		r.ws.entries[k] = waitEntry{since: now.Add(-time.Minute).UnixNano()}
		r.ws.setRecord(k, queue.Wait{Reason: queue.WaitCPU, Message: fmt.Sprintf("needs 1 CPU (round %d)", i), Since: now.Add(-time.Minute),
			Holders: []queue.Holder{{Job: fmt.Sprintf("sim-%06d", (i+1)%n), TaskID: fmt.Sprintf("task-%d", i)}}}, now)
	}
	per := float64(heapbench.Live()-before) / n
	t.Logf("waiting state: %.0f B per recorded entry", per)
	if per > maxWaitingStatePerEntry {
		t.Fatalf("the recorder keeps %.0f B per entry, more than its bound %d B", per, maxWaitingStatePerEntry)
	}
	waiting := make(map[string]queue.Wait, n)
	for _, k := range keys {
		waiting[k] = queue.Wait{Reason: queue.WaitBehind, Message: "behind"} // every reason changed
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	got, puts, more := r.waitingKeys(waiting, nil, now, max)
	runtime.ReadMemStats(&m1)
	if len(got) != max || len(puts) != max || !more || got[0] != keys[0] || got[max-1] != keys[max-1] {
		t.Fatalf("%d keys (%d puts, more %t), first %q last %q; want the first %d in path order", len(got), len(puts), more, got[0], got[len(got)-1], max)
	}
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("a commit's pick of %d writes over %d changed entries: %d B", max, n, alloc)
	if alloc > 1024*max { // a copy of every changed entry: ≈ 17 MB
		t.Fatalf("picking %d writes of %d allocated %d B", max, n, alloc)
	}
	runtime.KeepAlive(r)
}

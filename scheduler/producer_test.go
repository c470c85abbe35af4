package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler/timetable"
)

// runProducer starts the producer and returns a channel of fired batches.
func runProducer(t *testing.T, r *rig) <-chan []string {
	t.Helper()
	fired := make(chan []string, 16)
	p := r.sched.producer
	p.Events = &testEvents{fired: func(j []string) { fired <- j }}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return fired
}

// testEvents hears a producer in tests: each set function is called
// for its event.
type testEvents struct {
	noEvents
	fired   func(jobs []string)
	counted func(ctx context.Context, jobs []string)
}

func (e *testEvents) Fired(jobs []string) {
	if e.fired != nil {
		e.fired(jobs)
	}
}

func (e *testEvents) Counted(ctx context.Context, jobs []string) {
	if e.counted != nil {
		e.counted(ctx, jobs)
	}
}

// armedAt waits until the producer's timer is armed for want.
func armedAt(t *testing.T, r *rig, want time.Time) {
	t.Helper()
	deadline := time.After(10 * time.Second) // failure bound only
	for {
		if at, ok := r.clk.Pending(); ok && at.Equal(want) {
			return
		}
		select {
		case <-r.clk.Changed:
		case <-deadline:
			at, _ := r.clk.Pending()
			t.Fatalf("timer armed for %v, want %v", at, want)
		}
	}
}

func nextFire(t *testing.T, fired <-chan []string) []string {
	t.Helper()
	select {
	case j := <-fired:
		return j
	case <-time.After(10 * time.Second): // failure bound only
		t.Fatal("no fire")
		return nil
	}
}

func TestProducerFiresOnScheduleAndCollapsesWithoutMisfire(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "collapse"; j.Cron = "0/5 * * * * ?" })
	r.addJob(func(j *jobs.Config) { j.JobName = "grow"; j.Cron = "0/5 * * * * ?"; j.Misfire = true })
	r.addJob(func(j *jobs.Config) { j.JobName = "hourly"; j.Cron = "0 0 * * * ?" })
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(5*time.Second))
	r.clk.Advance(5 * time.Second)
	if got := nextFire(t, fired); len(got) != 2 {
		t.Fatalf("fired %v, want collapse and grow", got)
	}
	armedAt(t, r, t0.Add(10*time.Second))
	r.clk.Advance(5 * time.Second)
	nextFire(t, fired)
	if c := r.readyCount("collapse"); c != 1 {
		t.Fatalf("misfire=false: ready count %d, want pending fires collapsed into 1", c)
	}
	if c := r.readyCount("grow"); c != 2 {
		t.Fatalf("misfire=true: ready count %d, want 2", c)
	}
	if c := r.readyCount("hourly"); c != 0 {
		t.Fatalf("hourly fired early")
	}
}

func TestProducerSkipsDisabledAndDaemonJobsAndReschedules(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "d"; j.Cron = "0/5 * * * * ?"; j.JobExecutionType = jobs.Daemon })
	r.addJob(func(j *jobs.Config) { j.JobName = "t"; j.Cron = "0/5 * * * * ?" })
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "t", true, t0); err != nil {
		t.Fatal(err)
	}
	r.reload()
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(time.Hour)) // nothing to fire: idle timer
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "t", false, t0); err != nil {
		t.Fatal(err)
	}
	r.reload()
	r.sched.producer.Reschedule("t")
	armedAt(t, r, t0.Add(5*time.Second))
	r.clk.Advance(5 * time.Second)
	if got := nextFire(t, fired); len(got) != 1 || got[0] != "t" {
		t.Fatalf("fired %v", got)
	}
}

// TestProducerStallReplaysOnlyMisfireJobs: a producer that stalled for
// 12 periods (a paused leader, a commit the store held) replays every
// missed instant of a misfire=true job, each its own pending execution,
// and collapses a misfire=false job's into one (docs/jobs.md, the stall
// rule); both are on schedule after.
func TestProducerStallReplaysOnlyMisfireJobs(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "m"; j.Cron = "0/5 * * * * ?"; j.Misfire = true })
	r.addJob(func(j *jobs.Config) { j.JobName = "c"; j.Cron = "0/5 * * * * ?" })
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(5*time.Second))
	r.clk.Advance(time.Minute) // the scheduler stalled for 12 periods
	if got := nextFire(t, fired); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"c", "m"}) {
		t.Fatalf("fired %v, want both late fires", got)
	}
	for range 11 { // the missed instants 10 s ... 60 s, one commit each
		if got := nextFire(t, fired); !slices.Equal(got, []string{"m"}) {
			t.Fatalf("replayed %v, want m", got)
		}
	}
	armedAt(t, r, t0.Add(65*time.Second))
	if c := r.readyCount("m"); c != 12 {
		t.Fatalf("misfire=true: %d pending after a stall of 12 periods, want 12", c)
	}
	if c := r.readyCount("c"); c != 1 {
		t.Fatalf("misfire=false: %d pending after a stall, want the missed instants collapsed into 1", c)
	}
}

func TestProducerUsesTheJobTimeZone(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	// 10:00 UTC is 18:00 in Shanghai: the next 18:30 there is 10:30 UTC.
	r.addJob(func(j *jobs.Config) { j.JobName = "tz"; j.Cron = "0 30 18 * * ?"; j.TimeZone = "Asia/Shanghai" })
	runProducer(t, r)
	armedAt(t, r, t0.Add(30*time.Minute))
}

func TestFiresAreStagedAheadAndHeldUntilTheirInstant(t *testing.T) {
	r := newRig(t)
	r.sched.producer.Lead = 20 * time.Millisecond
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "staged"; j.Cron = "0/5 * * * * ?"; j.ShardingTotalCount = 1 })
	fired := runProducer(t, r)
	instant := t0.Add(5 * time.Second)
	armedAt(t, r, instant.Add(-20*time.Millisecond))
	r.clk.Set(instant.Add(-20 * time.Millisecond))
	nextFire(t, fired)
	q, _ := r.reg.Work().ReadyQueue(r.ctx)
	if len(q) != 1 || !q[0].NotBefore.Equal(instant) || !q[0].Since.Equal(instant) {
		t.Fatalf("staged entry %+v, want held until %v", q, instant)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 0 {
		t.Fatal("launched before the fire's instant")
	}
	if !r.sched.alarm.at.Equal(instant) {
		t.Fatalf("launcher wakes at %v, want %v", r.sched.alarm.at, instant)
	}
	r.clk.Set(instant)
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatal("not launched at the fire's instant")
	}
}

// TestProducerCatchUpAfterTakeover: fires scheduled after the watermark the
// last producer committed and before this producer started are handled by
// each job's misfire rule exactly once; fires at or before the watermark
// are not fired again, also when the previous producer staged them ahead.
func TestProducerCatchUpAfterTakeover(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "collapse"; j.Cron = "* * * * * ?" })
	r.addJob(func(j *jobs.Config) { j.JobName = "grow"; j.Cron = "* * * * * ?"; j.Misfire = true })
	r.addJob(func(j *jobs.Config) { j.JobName = "hourly"; j.Cron = "0 30 * * * ?" })
	// The last leader committed the fires of t0-5s; the new one starts at t0+0.5s.
	if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{}, t0.Add(-5*time.Second), t0.Add(-5*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	r.clk.Set(t0.Add(500 * time.Millisecond))
	fired := runProducer(t, r)
	got := nextFire(t, fired)
	if len(got) != 2 {
		t.Fatalf("caught up %v, want collapse and grow", got)
	}
	if c := r.readyCount("collapse"); c != 1 {
		t.Fatalf("misfire=false: %d pending, want the 5 missed fires as 1", c)
	}
	if c := r.readyCount("grow"); c != 5 {
		t.Fatalf("misfire=true: %d pending, want one per missed fire (t0-4s … t0)", c)
	}
	if c := r.readyCount("hourly"); c != 0 {
		t.Fatal("a job with no missed fire was queued")
	}
	if mark, ok, _ := r.reg.Schedule().FiredUntil(r.ctx); !ok || !mark.Equal(t0.Add(500*time.Millisecond)) {
		t.Fatalf("watermark %v %v, want the catch-up instant", mark, ok)
	}
	armedAt(t, r, t0.Add(time.Second)) // the next fire is the first one after the start
}

// TestProducerDoesNotRefireStagedInstants: a previous leader that staged a
// fire ahead of its instant (fire_lead) moved the watermark past the new
// producer's clock; that instant is not fired again.
func TestProducerDoesNotRefireStagedInstants(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "every"; j.Cron = "* * * * * ?" })
	if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{"every": false}, t0.Add(time.Second), t0.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	r.clk.Set(t0.Add(990 * time.Millisecond))
	runProducer(t, r)
	armedAt(t, r, t0.Add(2*time.Second))
	if c := r.readyCount("every"); c != 1 {
		t.Fatalf("%d pending, want only the staged fire", c)
	}
}

// TestFireLeadFollowsSlowCommits: fires are staged ahead by twice the
// slowest recent commit when that exceeds Lead (a large instant's batch on
// a loaded store), up to maxLead, and the lead shrinks back as commits get
// fast again.
func TestFireLeadFollowsSlowCommits(t *testing.T) {
	p := &Producer{Lead: 20 * time.Millisecond}
	if got := p.leadLocked(); got != 20*time.Millisecond {
		t.Fatalf("lead %v before any commit", got)
	}
	p.noteCommit(150 * time.Millisecond)
	if got := p.leadLocked(); got != 300*time.Millisecond {
		t.Fatalf("lead %v after a 150ms commit, want 300ms", got)
	}
	for range 30 { // a slow commit is still covered half a minute later
		p.noteCommit(time.Millisecond)
	}
	if got := p.leadLocked(); got < 150*time.Millisecond {
		t.Fatalf("lead %v 30 commits after a 150ms one, want it still covered", got)
	}
	for range 300 {
		p.noteCommit(time.Millisecond)
	}
	if got := p.leadLocked(); got != 20*time.Millisecond {
		t.Fatalf("lead %v after fast commits, want Lead again", got)
	}
	p.noteCommit(5 * time.Second)
	if got := p.leadLocked(); got != maxLead {
		t.Fatalf("lead %v after a 5s commit, want the bound %v", got, maxLead)
	}
}

// TestFirstTermRecordsTheWatermark: with no watermark in the registry, a
// producer records its start as one, so the fires of a term that ends
// before its first fire commits (its lease lost during that commit) are
// replayed by the next term, which otherwise had no point to count from.
func TestFirstTermRecordsTheWatermark(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "grow"; j.Cron = "* * * * * ?"; j.Misfire = true })
	p := r.sched.producer
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	armedAt(t, r, t0.Add(time.Second))
	cancel() // the term ends before its first fire
	<-done
	if mark, ok, err := r.reg.Schedule().FiredUntil(r.ctx); err != nil || !ok || !mark.Equal(t0) {
		t.Fatalf("watermark %v %v %v, want the first term's start", mark, ok, err)
	}
	r.clk.Set(t0.Add(2500 * time.Millisecond))
	fired := runProducer(t, r)
	if got := nextFire(t, fired); len(got) != 1 || got[0] != "grow" {
		t.Fatalf("caught up %v, want grow", got)
	}
	if c := r.readyCount("grow"); c != 2 {
		t.Fatalf("%d pending, want the 2 fires the first term missed (t0+1s, t0+2s)", c)
	}
}

// TestFiresOfSeveralInstantsCommitTogether: the instants due in one wake
// go out in as few commits as the bound allows, one instant never split,
// in heap order.
func TestFiresOfSeveralInstantsCommitTogether(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var due []timetable.Fire
	for i, n := range []int{3, 2, 5, 1} {
		for k := range n {
			due = append(due, timetable.Fire{At: t0.Add(time.Duration(i) * time.Second), Source: fmt.Sprintf("j%d-%d", i, k)})
		}
	}
	got := batches(byInstant(due), 6)
	var sizes []int
	var order []string
	for _, b := range got {
		sizes = append(sizes, len(b))
		for _, f := range b {
			order = append(order, f.Source)
		}
	}
	if !slices.Equal(sizes, []int{5, 6}) {
		t.Fatalf("commit sizes %v, want [5 6] (3+2, then 5+1)", sizes)
	}
	for i, f := range due {
		if order[i] != f.Source {
			t.Fatalf("fire %d is %s, want %s: heap order kept", i, order[i], f.Source)
		}
	}
	if got := batches(byInstant(due[:5]), 2); len(got) != 2 || len(got[0]) != 3 {
		t.Fatalf("an instant larger than the bound must go whole, got %d commits", len(got))
	}
}

// TestFireLeadLongerThanThePeriodHoldsTheNextFire: with a lead longer than
// a job's period (slow commits), the job's next fire is not staged while
// its last one is still queued: it waits for its instant (as without a
// lead) or for the entry to leave. Staged at once, a misfire=true job
// bunched two executions into one slot and a misfire=false job lost every
// other fire. A commit also stops before the next instant of a job it
// holds, and instants after a held fire wait with it: the watermark
// written with each commit says every fire up to it was committed.
func TestFireLeadLongerThanThePeriodHoldsTheNextFire(t *testing.T) {
	r := newRig(t)
	r.sched.producer.Lead = 3 * time.Second
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) {
		j.JobName = "every"
		j.Cron = "* * * * * ?"
		j.Misfire = true
		j.ShardingTotalCount = 1
	})
	r.addJob(func(j *jobs.Config) { j.JobName = "later"; j.Cron = "3 * * * * ?"; j.ShardingTotalCount = 1 })
	fired := runProducer(t, r)
	// The first fire (t0+1s) is staged at once, 3 s ahead (no entry yet);
	// "later" (t0+3s) not with it: "every" fires again before it.
	if got := nextFire(t, fired); !slices.Equal(got, []string{"every"}) {
		t.Fatalf("first staged %v, want every alone", got)
	}
	// Its next (t0+2s) is held for its instant: t0+1s's entry is queued.
	armedAt(t, r, t0.Add(2*time.Second))
	if c := r.readyCount("every"); c != 1 {
		t.Fatalf("every: %d pending, want 1 (the next fire held)", c)
	}
	if c := r.readyCount("later"); c != 0 {
		t.Fatal("later staged before instants before it were committed")
	}
	// The entry leaves (launched): the held fire is staged at once.
	r.sched.producer.NoteReady("every", false)
	if got := nextFire(t, fired); !slices.Equal(got, []string{"every"}) {
		t.Fatalf("after the entry left, staged %v, want every", got)
	}
	armedAt(t, r, t0.Add(3*time.Second))
	// At its instant a held fire commits whatever is queued (misfire rules).
	r.clk.Set(t0.Add(3 * time.Second))
	if got := nextFire(t, fired); !slices.Equal(got, []string{"every", "later"}) {
		t.Fatalf("at t0+3s staged %v, want every and later", got)
	}
	if c := r.readyCount("every"); c != 3 {
		t.Fatalf("every: %d pending at t0+3s, want 3 (none launched; misfire=true)", c)
	}
}

// The catch-up of a takeover is marked as one, so that after a leader's
// kill -9 the missed fire and the on-time fire, run ms apart, do not look
// like a double run: queued by "catch-up", it launches with source
// MISFIRE; the next on-time fire is NORMAL_TRIGGER by cron.
func TestCatchUpIsMarked(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "every"; j.Cron = "* * * * * ?" })
	if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{}, t0.Add(-2*time.Second), t0.Add(-2*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	r.clk.Set(t0.Add(500 * time.Millisecond))
	fired := runProducer(t, r)
	nextFire(t, fired)
	q, err := r.reg.Work().ReadyQueue(r.ctx)
	if err != nil || len(q) != 1 || q[0].FirstBy() != registry.ByCatchUp {
		t.Fatalf("ready %+v %v: want the catch-up queued by %q", q, err, registry.ByCatchUp)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	run := r.running("every")
	if len(run) == 0 {
		t.Fatal("the catch-up did not launch")
	}
	for item, e := range run {
		if e.Source != string(jobs.SourceMisfire) || e.Trigger != registry.ByCatchUp {
			t.Errorf("shard %d of the catch-up launched as %s by %s, want MISFIRE by catch-up", item, e.Source, e.Trigger)
		}
	}
}

// TestCatchUpCountsFromTheLastChange: a takeover's catch-up replays only
// fires of the config in force at each instant. A cron update committed
// while no leader fired (once the quorum was back, before the next leader
// took over) counts from the update, not from the watermark, which would
// replay the new cron's instants from before it; a job registered
// meanwhile counts from its registration; one with neither recorded from
// the watermark.
func TestCatchUpCountsFromTheLastChange(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	updated := r.addJob(func(j *jobs.Config) { j.JobName = "updated"; j.Cron = "*/10 * * * * ?"; j.Misfire = true })
	r.addJob(func(j *jobs.Config) { j.JobName = "kept"; j.Cron = "* * * * * ?"; j.Misfire = true })
	// The last leader committed the fires of t0-20s.
	if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{}, t0.Add(-20*time.Second), t0.Add(-20*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	// With no leader: updated's update at t0-2.5s to every second, and a
	// job registered at t0-1.5s.
	updated.Cron = "* * * * * ?"
	if err := r.reg.Config().UpdateJobAt(r.ctx, updated, t0.Add(-2500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	added := jobs.Default()
	added.JobName, added.AppName, added.Cron, added.Misfire, added.CPUCount, added.MemoryMB = "added", "app", "* * * * * ?", true, 0.5, 64
	if err := r.reg.Config().AddJobAt(r.ctx, added, t0.Add(-1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// And one disabled before the mark, enabled at t0-1.5s.
	r.addJob(func(j *jobs.Config) { j.JobName = "enabled"; j.Cron = "* * * * * ?"; j.Misfire = true })
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "enabled", true, t0.Add(-30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "enabled", false, t0.Add(-1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	r.reload()
	r.clk.Set(t0.Add(500 * time.Millisecond))
	fired := runProducer(t, r)
	nextFire(t, fired)
	for job, want := range map[string]int{
		"updated": 3,  // t0-2s, t0-1s, t0: the new cron's instants after the update (20 before the fix)
		"added":   2,  // t0-1s, t0
		"enabled": 2,  // t0-1s, t0: none of the instants it spent disabled
		"kept":    20, // t0-19s … t0: no change recorded, from the watermark
	} {
		if c := r.readyCount(job); c != want {
			t.Errorf("%s: %d fires caught up, want %d", job, c, want)
		}
	}
}

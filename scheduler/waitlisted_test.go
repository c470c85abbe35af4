package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// A waiting execution is always listed, always with its reason, whatever
// the load: these drive the launcher into the interleavings a loaded
// machine produces (a launch rolled back, a launch commit that conflicts,
// a first round that comes late) and check every committed state.

// watchedKV checks a condition after every commit (check, when set) and
// may fail the commits fail picks.
type watchedKV struct {
	store.KV
	check func(ops []store.Op)
	fail  func(ops []store.Op) error
}

func (w *watchedKV) Commit(ctx context.Context, ops ...store.Op) error {
	if w.fail != nil {
		if err := w.fail(ops); err != nil {
			return err
		}
	}
	err := w.KV.Commit(ctx, ops...)
	if err == nil && w.check != nil {
		w.check(ops)
	}
	return err
}

// newWatchedRig is newRig over a watchedKV.
func newWatchedRig(t *testing.T) (*rig, *watchedKV) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	kv := &watchedKV{KV: mem}
	r := &rig{t: t, ctx: ctx, reg: registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)}), kv: mem, drv: newFakeDriver(), clk: clock.NewFake(t0)}
	r.sched = New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk,
		Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
	r.sched.st.subscribed = true
	r.sched.recon.async = inline
	return r, kv
}

// listedState is what GET /api/job/tasks/ready and …/running show of job:
// its ready entry (queued), its running shards, and its recorded reason.
func listedState(ctx context.Context, kv store.KV, job string) (queued, running bool, why queue.Wait, hasWhy bool, err error) {
	reg := registry.New(kv, registry.Options{})
	_, queued, err = reg.Work().ReadyOf(ctx, job)
	if err != nil {
		return
	}
	run, err := reg.Work().RunningOf(ctx, job)
	if err != nil {
		return
	}
	why, hasWhy, err = reg.Work().WaitingOf(ctx, queue.WaitKey(false, job, 0))
	return queued, len(run) > 0, why, hasWhy, err
}

// everyStateListsIt checks, after each commit, that job is queued or
// running (never neither), and that, queued with a reason recorded
// before, it is never found queued without one.
func everyStateListsIt(t *testing.T, r *rig, kv *watchedKV, job string) *[]string {
	var bad []string
	hadWhy := false
	kv.check = func(ops []store.Op) {
		queued, running, _, hasWhy, err := listedState(context.Background(), kv.KV, job)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !queued && !running:
			bad = append(bad, fmt.Sprintf("after a commit of %d ops: %s neither queued nor running", len(ops), job))
		case queued && !hasWhy && hadWhy:
			bad = append(bad, fmt.Sprintf("after a commit of %d ops: %s queued without its reason", len(ops), job))
		}
		hadWhy = hadWhy || hasWhy
	}
	return &bad
}

// TestARolledBackLaunchStaysListedWithItsReason: an execution that waited
// (its reason recorded) launches, and the engine refuses the ACCEPT.
// At no commit of the roll-back is it neither queued nor running; it is
// queued again since it was first queued, and its reason, recorded at
// once, says its launch failed.
func TestARolledBackLaunchStaysListedWithItsReason(t *testing.T) {
	r, kv := newWatchedRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName = "j"; j.ShardingTotalCount = 2; j.CPUCount = 1 })
	r.agent(4, 1024)
	r.trigger("j")
	bad := everyStateListsIt(t, r, kv, "j")

	r.offer("small", 1, 1024) // 2.1 CPUs needed: it waits
	r.round()
	if w := r.waiting()["ready/j"]; w.Reason == "" || !w.Since.Equal(t0) {
		t.Fatalf("before the launch: %+v, want a reason since %v", w, t0)
	}
	r.clk.Advance(2 * waitRecordEvery)
	r.offer("big", 4, 1024)
	r.drv.acceptErr = errors.New("offer big is no longer valid")
	r.sched.launcher.round(r.ctx)
	if len(r.drv.tried) != 1 {
		t.Fatalf("ACCEPTs tried: %d, want 1", len(r.drv.tried))
	}
	for _, b := range *bad {
		t.Error(b)
	}
	rd, ok, err := r.reg.Work().ReadyOf(r.ctx, "j")
	if err != nil || !ok || rd.Count != 1 || !rd.Since.Equal(t0) {
		t.Fatalf("after the roll-back: entry %+v (%v, %v), want one execution queued since %v", rd, ok, err, t0)
	}
	if len(r.running("j")) != 0 {
		t.Fatal("running entries left by the roll-back")
	}
	w, ok := r.waiting()["ready/j"]
	if !ok || w.Reason != queue.WaitLaunchFailed || !w.Since.Equal(t0) {
		t.Fatalf("after the roll-back: reason %+v (%v), want %s since %v", w, ok, queue.WaitLaunchFailed, t0)
	}
	// The next round launches it under the same task ids; its reason goes.
	r.drv.acceptErr = nil
	r.clk.Advance(waitRecordEvery)
	r.offer("big2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	r.clk.Advance(waitRecordEvery)
	r.sched.launcher.round(r.ctx)
	if len(r.running("j")) != 2 {
		t.Fatalf("not launched again: %d running", len(r.running("j")))
	}
	if _, ok := r.waiting()["ready/j"]; ok {
		t.Fatal("the reason outlived the launch")
	}
}

// TestALaunchCommitThatConflictsKeepsTheReason: the round means to launch
// a waiting execution and its commit conflicts (a write meanwhile): the
// execution still waits, and its reason stays recorded.
func TestALaunchCommitThatConflictsKeepsTheReason(t *testing.T) {
	r, kv := newWatchedRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName = "j"; j.ShardingTotalCount = 1; j.CPUCount = 1 })
	r.agent(4, 1024)
	r.trigger("j")
	bad := everyStateListsIt(t, r, kv, "j")
	r.offer("small", 0.5, 1024)
	r.round()
	before, ok := r.waiting()["ready/j"]
	if !ok {
		t.Fatal("no reason recorded while it waited")
	}
	r.clk.Advance(2 * waitRecordEvery)
	r.offer("big", 4, 1024)
	kv.fail = func(ops []store.Op) error {
		for _, op := range ops {
			if op.Path == registry.ReadyPath+"/j" && op.Kind == store.OpDelete {
				return store.ErrConflict // the launch's dequeue
			}
		}
		return nil
	}
	r.sched.launcher.round(r.ctx)
	kv.fail = nil
	if len(r.drv.tried) != 0 {
		t.Fatalf("ACCEPTs after a conflicting commit: %d", len(r.drv.tried))
	}
	for _, b := range *bad {
		t.Error(b)
	}
	w, ok := r.waiting()["ready/j"]
	if !ok || w.Reason != before.Reason || !w.Since.Equal(t0) {
		t.Fatalf("after the conflicting launch: reason %+v (%v), want %+v kept", w, ok, before)
	}
}

// TestALateFirstRoundRecordsTheReasonAtOnce: on a loaded machine the
// first round to see an execution may come well after it was queued; it
// has waited since it was queued, so that round records its reason.
func TestALateFirstRoundRecordsTheReasonAtOnce(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.JobName = "j"; j.ShardingTotalCount = 1; j.CPUCount = 1 })
	r.trigger("j")
	r.offer("small", 0.5, 1024)
	r.clk.Advance(waitRecordAfter + 500*time.Millisecond) // no round meanwhile
	r.sched.launcher.round(r.ctx)
	w, ok := r.waiting()["ready/j"]
	if !ok || w.Reason == "" || !w.Since.Equal(t0) {
		t.Fatalf("after the first round, 1.5 s after it was queued: reason %+v (%v), want one since %v", w, ok, t0)
	}
}

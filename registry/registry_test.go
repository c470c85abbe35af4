package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*Registry, context.Context) {
	t.Helper()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	r := New(kv)
	ctx := context.Background()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://h/a.tgz", "bin/start.sh"
	if err := r.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"j1", "j2"} {
		j := jobs.Default()
		j.JobName, j.AppName = n, "app"
		if err := r.Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	return r, ctx
}

func count(t *testing.T, r *Registry, job string) queue.Ready {
	t.Helper()
	q, err := r.Work().ReadyQueue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range q {
		if rd.Job == job {
			return rd
		}
	}
	return queue.Ready{}
}

func TestTriggerCollapsesOrGrows(t *testing.T) {
	r, ctx := setup(t)
	for range 3 {
		if _, err := r.Work().Trigger(ctx, "j1", false, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Work().Trigger(ctx, "j2", true, t0); err != nil {
			t.Fatal(err)
		}
	}
	if c := count(t, r, "j1").Count; c != 1 {
		t.Fatalf("misfire=false count %d", c)
	}
	rd := count(t, r, "j2")
	if rd.Count != 3 || rd.Misfired != 2 {
		t.Fatalf("misfire=true %+v", rd)
	}
	r.maxPending = 3
	if changed, err := r.Work().Trigger(ctx, "j2", true, t0); err != nil || changed {
		t.Fatalf("past MaxPending: changed=%v err=%v", changed, err)
	}
}

func TestTriggerManyWithWrongBeliefLosesNothing(t *testing.T) {
	r, ctx := setup(t)
	if _, err := r.Work().Trigger(ctx, "j1", true, t0); err != nil {
		t.Fatal(err)
	}
	// Believe both are absent: j1's blind create fails, the batch is redone with reads.
	if err := r.Work().TriggerMany(ctx, map[string]bool{"j1": true, "j2": true}, t0, time.Time{}, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if c1, c2 := count(t, r, "j1").Count, count(t, r, "j2").Count; c1 != 2 || c2 != 1 {
		t.Fatalf("counts %d %d, want 2 1", c1, c2)
	}
	// Believe present although absent: read path, still correct.
	if err := r.Work().ClearReady(ctx, "j2"); err != nil {
		t.Fatal(err)
	}
	if err := r.Work().TriggerMany(ctx, map[string]bool{"j2": false}, t0, time.Time{}, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if c := count(t, r, "j2").Count; c != 1 {
		t.Fatalf("count %d", c)
	}
}

// TestTriggerFiresHoldsEachEntryUntilItsInstant: fires of several instants
// committed together keep each entry's own notBefore, and the watermark is
// the batch's last instant.
func TestTriggerFiresHoldsEachEntryUntilItsInstant(t *testing.T) {
	r, ctx := setup(t)
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	fires := map[string]CronFire{"j1": {Misfire: true, At: t1}, "j2": {At: t2}}
	if _, err := r.Work().TriggerFires(ctx, fires, t2, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if nb1, nb2 := count(t, r, "j1").NotBefore, count(t, r, "j2").NotBefore; !nb1.Equal(t1) || !nb2.Equal(t2) {
		t.Fatalf("notBefore %v %v, want %v %v", nb1, nb2, t1, t2)
	}
	w, err := r.Schedule().Watermark(ctx)
	if err != nil || !w.OK || !w.Until.Equal(t2) {
		t.Fatalf("watermark %+v %v, want %v", w, err, t2)
	}
}

// TestAFireStagedIntoAPendingExecutionSurvivesItsEarlyLaunch: a
// misfire=false fire staged ahead into an entry whose execution is still
// pending is not lost when that execution launches before the fire's
// instant: the entry is left with the fire, held back until its instant
// (kube soak 561).
func TestAFireStagedIntoAPendingExecutionSurvivesItsEarlyLaunch(t *testing.T) {
	r, ctx := setup(t)
	t1, t2 := t0.Add(time.Second), t0.Add(11*time.Second)
	all := func(string) bool { return true }
	if _, err := r.Work().TriggerFires(ctx, map[string]CronFire{"j1": {At: t1, Instant: t1}}, t1, all); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Work().TriggerFires(ctx, map[string]CronFire{"j1": {At: t2, Instant: t2}}, t2, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	rd := count(t, r, "j1")
	if rd.Count != 1 || !rd.Staged.Equal(t2) {
		t.Fatalf("the fire of %v is not staged into the pending execution: %+v", t2, rd)
	}
	if err := r.commit(ctx, dequeueOps(rd, t2.Add(-5*time.Second))...); err != nil { // launched 5 s before the fire's instant
		t.Fatal(err)
	}
	rd = count(t, r, "j1")
	if rd.Count != 1 || !rd.NotBefore.Equal(t2) || !rd.FirstNominal().Equal(t2) {
		t.Fatalf("after the pending execution launched, the staged fire is lost or not held: %+v", rd)
	}
}

func TestTriggerRunOverridesAndIdempotency(t *testing.T) {
	r, ctx := setup(t)
	dup, err := r.Work().TriggerRun(ctx, "j1", queue.PendingRun{JobParameter: "a", IdempotencyKey: "k1"}, t0)
	if err != nil || dup {
		t.Fatal(dup, err)
	}
	if dup, _ = r.Work().TriggerRun(ctx, "j1", queue.PendingRun{JobParameter: "a", IdempotencyKey: "k1"}, t0); !dup {
		t.Fatal("same key queued twice")
	}
	if _, err := r.Work().TriggerRun(ctx, "j1", queue.PendingRun{JobParameter: "b"}, t0); err != nil {
		t.Fatal(err)
	}
	rd := count(t, r, "j1")
	if rd.Count != 2 || len(rd.Runs) != 2 || rd.Runs[0].JobParameter != "a" {
		t.Fatalf("%+v", rd)
	}
	if err := r.commit(ctx, dequeueOps(rd, t0)...); err != nil {
		t.Fatal(err)
	}
	rd = count(t, r, "j1")
	if rd.Count != 1 || len(rd.Runs) != 1 || rd.Runs[0].JobParameter != "b" {
		t.Fatalf("after dequeue %+v", rd)
	}
	if err := r.Work().PruneTriggerKeys(ctx, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if dup, _ := r.Work().TriggerRun(ctx, "j1", queue.PendingRun{IdempotencyKey: "k1"}, t0); dup {
		t.Fatal("a pruned key still counts as seen")
	}
	r.maxPending = 1
	if _, err := r.Work().TriggerRun(ctx, "j1", queue.PendingRun{}, t0); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("err = %v, want ErrQueueFull", err)
	}
}

func TestDequeueIsConditional(t *testing.T) {
	r, ctx := setup(t)
	if _, err := r.Work().Trigger(ctx, "j1", true, t0); err != nil {
		t.Fatal(err)
	}
	stale := count(t, r, "j1")
	if _, err := r.Work().Trigger(ctx, "j1", true, t0); err != nil {
		t.Fatal(err)
	}
	if err := r.commit(ctx, dequeueOps(stale, t0)...); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("dequeue at a stale version: %v (a concurrent trigger would be lost)", err)
	}
}

func TestDeleteAppCascadesAndUpdateClearsQueues(t *testing.T) {
	r, ctx := setup(t)
	if _, err := r.Work().Trigger(ctx, "j1", false, t0); err != nil {
		t.Fatal(err)
	}
	if err := r.commit(ctx, putFailoverOp("j1", 0, queue.Failover{TaskID: "x", Since: t0})); err != nil {
		t.Fatal(err)
	}
	j, _ := r.Config().Job(ctx, "j1")
	j.Description = "changed"
	if err := r.Config().UpdateJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if count(t, r, "j1").Count != 0 {
		t.Fatal("update left the ready entry")
	}
	if fo, _ := r.Work().FailoverQueue(ctx); len(fo) != 0 {
		t.Fatal("update left the failover entry")
	}
	if err := r.Config().SetDisabled(ctx, "job", "j2", true, t0); err != nil {
		t.Fatal(err)
	}
	deleted, err := r.Config().DeleteApp(ctx, "app")
	if err != nil || len(deleted) != 2 {
		t.Fatalf("deleted %v %v", deleted, err)
	}
	if all, _ := r.Config().Jobs(ctx); len(all) != 0 {
		t.Fatal("jobs survived their app")
	}
	if d, _ := r.Config().IsDisabled(ctx, "job", "j2"); d {
		t.Fatal("disable flag survived")
	}
	if _, err := r.Config().App(ctx, "app"); !errors.Is(err, ErrAppNotFound) {
		t.Fatal(err)
	}
}

func TestSetAppURL(t *testing.T) {
	ctx := t.Context()
	kv := memory.New()
	r := New(kv)
	a := app.Default()
	a.AppName, a.BootstrapScript, a.CPUCount = "a", "run.sh", 0.5
	if err := r.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := r.Config().SetAppURL(ctx, "a", "http://s/packages/x")
	if err != nil || got.AppURL != "http://s/packages/x" || got.CPUCount != 0.5 {
		t.Fatalf("SetAppURL = %+v, %v", got, err)
	}
	n1, _ := kv.Get(ctx, AppsPath+"/a")
	if _, err := r.Config().SetAppURL(ctx, "a", "http://s/packages/x"); err != nil {
		t.Fatal(err)
	}
	if n2, _ := kv.Get(ctx, AppsPath+"/a"); n2.Version != n1.Version {
		t.Fatalf("the same URL again wrote the app (version %d → %d): its jobs would be rescheduled", n1.Version, n2.Version)
	}
	if _, err := r.Config().SetAppURL(ctx, "nope", "http://s/x"); !errors.Is(err, ErrAppNotFound) {
		t.Fatalf("unknown app: %v", err)
	}
}

package flowengine

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// A backfill's run begins at once beside a live run holding the only slot
// (maxConcurrentRuns 1), its node's execution carries the run's nominal
// instant (ELASTICJOB_SCHEDULED_TIME), and a live run triggered while it
// runs begins without waiting for it.
func TestBackfillRunBeginsOutsideTheLimitAndHandsItsInstant(t *testing.T) {
	r := newRig(t, "a")
	r.register(chain("w", "a"))
	r.start()
	live := r.trigger("w", nil)
	r.round()
	if r.run("w", live).State != workflow.RunRunning {
		t.Fatal("the live run did not begin")
	}
	c, err := r.reg.Flows().Workflow(r.ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 2, 1, 3, 0, 0, 0, time.UTC)
	run := workflow.NewRun(c, registry.BackfillWorkflowRunID(at), workflow.SourceBackfill, nil, "", r.clk.Now())
	run.ScheduledAt, run.Backfill = at, "bf-1"
	if owner, err := r.reg.Schedule().EnqueueBackfillWorkflowRun(r.ctx, run); err != nil || owner != "bf-1" {
		t.Fatalf("enqueue: %q %v", owner, err)
	}
	if owner, err := r.reg.Schedule().EnqueueBackfillWorkflowRun(r.ctx, run); err != nil || owner != "bf-1" {
		t.Fatalf("enqueue again: %q %v", owner, err)
	}
	if err := r.eng.loadRuns(r.ctx, "w"); err != nil {
		t.Fatal(err)
	}
	r.round()
	if st := r.run("w", run.ID).State; st != workflow.RunRunning {
		t.Fatalf("the backfill's run is %s beside a live run", st)
	}
	var scheduled []time.Time
	for _, p := range r.pending("a") {
		scheduled = append(scheduled, p.ScheduledAt)
	}
	if len(scheduled) != 2 || !scheduled[0].IsZero() || !scheduled[1].Equal(at) {
		t.Fatalf("queued executions' instants %v, want [zero %s]", scheduled, at)
	}
	r.execute("a", "TASK_FINISHED", nil) // the live run's node
	r.round()
	next := r.trigger("w", nil)
	r.round()
	if st := r.run("w", next).State; st != workflow.RunRunning {
		t.Fatalf("a live run is %s while only a backfill's run runs", st)
	}
}

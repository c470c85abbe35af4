package scheduler

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
)

// A workflow node's execution: its inputs (kept in the run's record) reach
// every shard's sharding context, also a retried shard's; each shard's end
// records its process times and outputs from the executor's report.
func TestWorkflowNodeInputsAndOutputs(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount, j.MaxRetries = 2, 1 })
	in := jobs.Inputs{"extract": {"rows": "42"}}
	ch := r.reg.Change()
	if err := ch.QueueNodes(r.ctx, "job", []registry.NodeStart{{Key: "wf-k1", Owner: "w/r/n", Parameter: "p1", Inputs: in}}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := ch.Commit(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.offer("o", 8, 4096)
	r.sched.launcher.round(r.ctx)
	launched := r.drv.launched()
	if len(launched) != 2 {
		t.Fatalf("launched %d tasks", len(launched))
	}
	for _, l := range launched {
		td, err := l.Task, l.Task.Check()
		if err != nil || !reflect.DeepEqual(td.ShardingContext.Inputs, in) || td.ShardingContext.JobParameter != "p1" {
			t.Fatalf("task data %+v %v", td.ShardingContext, err)
		}
	}
	run := r.running("job")
	start, end := t0.Add(time.Second), t0.Add(2*time.Second)
	report := `{"hostname":"h","ip":"1.2.3.4","startTime":"` + start.Format(time.RFC3339Nano) + `","completeTime":"` + end.Format(time.RFC3339Nano) +
		`","exitCode":0,"outputs":{"k":"v0"}}`
	r.status(run[0].TaskID, "TASK_RUNNING")
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[0].TaskID, AgentID: "agent-1", State: "TASK_FINISHED", Data: []byte(report)}); err != nil {
		t.Fatal(err)
	}
	r.status(run[1].TaskID, "TASK_RUNNING")
	r.statusMsg(run[1].TaskID, "TASK_FAILED", "exit code 1") // retried within the run
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	all := r.drv.launched()
	retry := all[len(all)-1]
	if td := retry.Task; !reflect.DeepEqual(td.ShardingContext.Inputs, in) || td.ShardingContext.ShardingItem != 1 {
		t.Fatalf("retried shard's context %+v", td.ShardingContext)
	}
	r.status(retry.TaskID, "TASK_RUNNING")
	r.status(retry.TaskID, "TASK_FINISHED")
	rec, err := r.reg.Work().RunRecordOf(r.ctx, "wf-k1")
	if err != nil || !rec.Done || !rec.Success || rec.Workflow != "w/r/n" || len(rec.Shards) != 2 {
		t.Fatalf("record %+v %v", rec, err)
	}
	s0 := rec.Shards[0]
	if s0.Item != 0 || !s0.StartedAt.Equal(start) || !s0.EndedAt.Equal(end) || s0.Outputs["k"] != "v0" {
		t.Fatalf("shard 0 outcome %+v", s0)
	}
	if s1 := rec.Shards[1]; s1.TaskID != retry.TaskID || s1.EndedAt.IsZero() {
		t.Fatalf("shard 1 outcome %+v", s1)
	}
	// A workflow node's record outlives the keys' lifetime (the engine removes it).
	r.clk.Advance(TriggerKeyLifetime + time.Hour)
	if err := r.reg.Work().PruneTriggerKeys(r.ctx, r.clk.Now().Add(-TriggerKeyLifetime)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.reg.Work().RunRecordOf(r.ctx, "wf-k1"); err != nil {
		t.Fatalf("pruned: %v", err)
	}
}

// launched lists every task launched, in order.
func (d *fakeDriver) launched() []engine.TaskLaunch {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []engine.TaskLaunch
	for _, a := range d.accepts {
		out = append(out, a.launches...)
	}
	return out
}

// A failed ACCEPT of a keyed run (a workflow node's execution) puts the run
// back with its key and parameter, first in line: it is not turned into a
// plain execution whose end nobody would record.
func TestAcceptFailureKeepsTheKeyedRun(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 32)
	r.addJob(nil)
	r.trigger("job") // a plain execution behind it
	if _, err := r.reg.Work().TriggerRun(r.ctx, "job", queue.PendingRun{IdempotencyKey: "wf-k", JobParameter: "p"}, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	r.drv.acceptErr = errors.New("master gone")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	rd, ok, err := r.reg.Work().ReadyOf(r.ctx, "job")
	if err != nil || !ok || rd.Count != 2 || len(rd.Runs) != 1 || rd.Runs[0].IdempotencyKey != "wf-k" || rd.Runs[0].JobParameter != "p" {
		t.Fatalf("ready entry after the failed accept: %+v %v", rd, err)
	}
	r.drv.acceptErr = nil
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if rt := r.running("job")[0]; rt.RunKey != "wf-k" {
		t.Fatalf("relaunched without the key: %+v", rt)
	}
}

package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/workflow"
)

func TestQueueAndDropNodeExecutions(t *testing.T) {
	ctx := context.Background()
	r := New(memory.New())
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := r.Work().Trigger(ctx, "j", false, now); err != nil { // a plain (cron) execution first
		t.Fatal(err)
	}
	ops, err := r.queueNodeOps(ctx, "j", []NodeStart{{Key: "wf-1", Owner: "w/r/a", Parameter: "p"}, {Key: "wf-2", Owner: "w/r/b"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.commit(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	if err := r.commit(ctx, ops...); err == nil {
		t.Fatal("queuing the same keys twice committed")
	}
	rd, ok, err := r.Work().ReadyOf(ctx, "j")
	if err != nil || !ok || rd.Count != 3 || len(rd.Runs) != 2 || rd.Runs[0].IdempotencyKey != "wf-1" || rd.Runs[0].JobParameter != "p" {
		t.Fatalf("ready entry %+v %v", rd, err)
	}
	rec, err := r.Work().RunRecordOf(ctx, "wf-2")
	if err != nil || rec.Workflow != "w/r/b" || rec.JobName != "j" {
		t.Fatalf("record %+v %v", rec, err)
	}
	ops, ok, err = r.dropPendingRunOps(ctx, "j", "wf-1")
	if err != nil || !ok {
		t.Fatalf("drop: %v %v", ok, err)
	}
	if err := r.commit(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	if rd, _, _ := r.Work().ReadyOf(ctx, "j"); rd.Count != 2 || len(rd.Runs) != 1 || rd.Runs[0].IdempotencyKey != "wf-2" {
		t.Fatalf("after the drop: %+v", rd)
	}
	if _, ok, _ := r.dropPendingRunOps(ctx, "j", "wf-1"); ok {
		t.Fatal("dropped twice")
	}
	keys, _ := r.Work().PendingKeys(ctx)
	if !keys["wf-2"] || keys["wf-1"] {
		t.Fatalf("pending keys %v", keys)
	}
	// Workflow node records are not pruned by age.
	if err := r.Work().PruneTriggerKeys(ctx, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Work().RunRecordOf(ctx, "wf-2"); err != nil {
		t.Fatalf("pruned a node record: %v", err)
	}
}

func TestWorkflowRunsAndKeys(t *testing.T) {
	ctx := context.Background()
	r := New(memory.New())
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := workflow.Default()
	c.Name, c.Nodes = "w", []workflow.Node{{ID: "a", Job: "j"}}
	run := workflow.NewRun(c, "r1", workflow.SourceAPI, nil, "k", now)
	if _, _, err := r.Flows().CreateWorkflowRun(ctx, run, 0); !errors.Is(err, workflow.ErrNotFound) {
		t.Fatalf("a run of an unknown workflow: %v", err)
	}
	if err := r.Flows().AddWorkflow(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := r.Flows().AddWorkflow(ctx, c); !errors.Is(err, workflow.ErrExists) {
		t.Fatalf("registered twice: %v", err)
	}
	id, dup, err := r.Flows().CreateWorkflowRun(ctx, run, 1)
	if err != nil || dup || id != "r1" {
		t.Fatalf("%s %v %v", id, dup, err)
	}
	again := workflow.NewRun(c, "r2", workflow.SourceAPI, nil, "k", now)
	if id, dup, err := r.Flows().CreateWorkflowRun(ctx, again, 1); err != nil || !dup || id != "r1" {
		t.Fatalf("same key: %s %v %v", id, dup, err)
	}
	again.IdempotencyKey = ""
	if _, _, err := r.Flows().CreateWorkflowRun(ctx, again, 1); !errors.Is(err, workflow.ErrTooManyQueued) {
		t.Fatalf("over the queued limit: %v", err)
	}
	if err := r.Flows().DeleteWorkflow(ctx, "w", now); err != nil {
		t.Fatal(err)
	}
	left, err := r.Flows().WorkflowRun(ctx, "w", "r1")
	if err != nil || left.Cancel == nil {
		t.Fatalf("the run of a deleted workflow is not cancelling: %+v %v", left.Cancel, err)
	}
	if keys, _ := r.Flows().WorkflowKeysOf(ctx, "w"); len(keys) != 0 {
		t.Fatalf("keys kept: %v", keys)
	}
}

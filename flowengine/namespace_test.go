package flowengine

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/workflow"
)

// A workflow of namespace pay, whose nodes name pay's jobs a and b, runs
// pay's a and b, never the default namespace's jobs of the same names; its
// node executions' records are kept in pay's tree, and pay reads the run
// with its own names.
func TestAWorkflowOfANamespaceRunsItsOwnJobs(t *testing.T) {
	r := newRig(t, "a", "b") // the default namespace's a and b
	if _, err := r.reg.Tenancy().PutNamespace(r.ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	pay := r.reg.In("pay")
	if err := pay.Config().AddApp(r.ctx, app.Config{AppName: "app", AppURL: "file:///a.tgz", BootstrapScript: "run.sh", CPUCount: 1, MemoryMB: 32}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"a", "b"} {
		if err := pay.Config().AddJob(r.ctx, jobs.Config{JobName: j, AppName: "app", JobExecutionType: jobs.Transient, ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 8}); err != nil {
			t.Fatal(err)
		}
	}
	c := chain("etl", "a", "b")
	c.MaxConcurrentRuns = 1
	c.Nodes[1].Trigger = c.Nodes[1].RuleOf()
	c.Nodes[0].Trigger = c.Nodes[0].RuleOf()
	if err := pay.Flows().AddWorkflow(r.ctx, c); err != nil {
		t.Fatal(err)
	}
	r.start()
	if err := r.eng.reloadDef(r.ctx, "pay~etl"); err != nil {
		t.Fatal(err)
	}
	// Triggered as the API does, in pay's view.
	now := r.clk.Now()
	id, _, err := pay.Flows().CreateWorkflowRun(r.ctx, workflow.NewRun(c, workflow.NewRunID(now, ""), workflow.SourceAPI, nil, "", now), 0)
	if err != nil {
		t.Fatal(err)
	}
	r.eng.dirty[runRef{"pay~etl", id}] = true
	r.clk.Advance(time.Millisecond)
	r.round()
	if got := r.pending("a"); len(got) != 0 {
		t.Fatalf("the default namespace's a was queued: %+v", got)
	}
	runs := r.pending("pay~a")
	if len(runs) != 1 || runs[0].IdempotencyKey != workflow.NodeKey("pay~etl", id, "a", 1) || namespace.Of(runs[0].IdempotencyKey) != "pay" {
		t.Fatalf("pay's a: %+v", runs)
	}
	rec, err := pay.Work().RunRecordOf(r.ctx, namespace.Name(runs[0].IdempotencyKey))
	if err != nil || rec.JobName != "a" || rec.Workflow != "etl/"+id+"/a" {
		t.Fatalf("the node's record in pay's tree: %+v %v", rec, err)
	}
	r.execute("pay~a", "TASK_FINISHED", nil)
	r.round()
	if got := r.pending("b"); len(got) != 0 {
		t.Fatalf("the default namespace's b was queued: %+v", got)
	}
	r.execute("pay~b", "TASK_FINISHED", nil)
	r.round()
	run, err := pay.Flows().WorkflowRun(r.ctx, "etl", id)
	if err != nil || run.State != workflow.RunSucceeded || run.Workflow != "etl" || run.Nodes[0].Job != "a" || namespace.Of(run.Nodes[0].RunKey) != namespace.Default {
		t.Fatalf("pay's run as pay reads it: %+v %v", run, err)
	}
}

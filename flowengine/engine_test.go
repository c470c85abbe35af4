package flowengine

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/workflow"
)

func TestChainRunsToTheEndPassingOutputs(t *testing.T) {
	r := newRig(t, "a", "b", "c")
	r.register(chain("etl", "a", "b", "c"))
	r.start()
	param := "day=1"
	id := r.trigger("etl", &param)
	r.round()
	run := r.run("etl", id)
	if run.State != workflow.RunRunning {
		t.Fatalf("run %s", run.State)
	}
	runs := r.pending("a")
	if len(runs) != 1 || runs[0].IdempotencyKey != workflow.NodeKey("etl", id, "a", 1) || runs[0].JobParameter != "day=1" {
		t.Fatalf("a's execution: %+v", runs)
	}
	rec, err := r.reg.Work().RunRecordOf(r.ctx, runs[0].IdempotencyKey)
	if err != nil || rec.Workflow != "etl/"+id+"/a" || rec.JobName != "a" {
		t.Fatalf("record %+v %v", rec, err)
	}
	keyA := r.execute("a", "TASK_FINISHED", map[string]string{"rows": "42"})
	r.round()
	if _, err := r.reg.Work().RunRecordOf(r.ctx, keyA); !isNotFound(err) {
		t.Fatalf("a's record is kept after its outcome was copied: %v", err)
	}
	run = r.run("etl", id)
	r.wantStates(run, map[string]workflow.NodeState{"a": workflow.NodeSucceeded, "b": workflow.NodeRunning, "c": workflow.NodePending})
	if run.Node("a").Outputs["rows"] != "42" || run.Node("a").Shards[0].TaskID == "" {
		t.Fatalf("a's outcome %+v", run.Node("a"))
	}
	recB, _ := r.reg.Work().RunRecordOf(r.ctx, run.Node("b").RunKey)
	if recB.Inputs["a"]["rows"] != "42" {
		t.Fatalf("b's inputs %+v", recB.Inputs)
	}
	r.execute("b", "TASK_FINISHED", nil)
	r.round()
	r.execute("c", "TASK_FINISHED", nil)
	r.round()
	run = r.run("etl", id)
	if run.State != workflow.RunSucceeded || run.EndedAt.IsZero() {
		t.Fatalf("run %s", run.State)
	}
	if len(r.eng.active) != 0 || len(r.eng.owners) != 0 {
		t.Fatalf("engine still tracks %v %v", r.eng.active, r.eng.owners)
	}
	// The observer saw the begin and the end.
	var begun, ended int
	for _, c := range r.seen.changes {
		if c[1].State == workflow.RunRunning && c[0].State == workflow.RunQueued {
			begun++
		}
		if c[1].State.Final() && !c[0].State.Final() {
			ended++
		}
	}
	if begun != 1 || ended != 1 {
		t.Fatalf("observer: %d begins, %d ends", begun, ended)
	}
}

func TestNodeWithoutParameterRunsWithItsJobsOwn(t *testing.T) {
	r := newRig(t, "a")
	r.register(chain("w", "a"))
	r.start()
	r.trigger("w", nil)
	r.round()
	if runs := r.pending("a"); len(runs) != 1 || runs[0].JobParameter != "own-a" {
		t.Fatalf("%+v", runs)
	}
}

func TestMaxConcurrentRunsQueuesOldestFirst(t *testing.T) {
	r := newRig(t, "a")
	r.register(chain("w", "a"))
	r.start()
	first, second, third := r.trigger("w", nil), r.trigger("w", nil), r.trigger("w", nil)
	r.round()
	if r.run("w", first).State != workflow.RunRunning || r.run("w", second).State != workflow.RunQueued || r.run("w", third).State != workflow.RunQueued {
		t.Fatal("more than one run began")
	}
	r.execute("a", "TASK_FINISHED", nil)
	r.round()
	if r.run("w", first).State != workflow.RunSucceeded || r.run("w", second).State != workflow.RunRunning || r.run("w", third).State != workflow.RunQueued {
		t.Fatalf("after the first ended: %s %s %s", r.run("w", first).State, r.run("w", second).State, r.run("w", third).State)
	}
	// Disabled: queued runs wait, the running one goes on.
	if err := r.reg.Config().SetDisabled(r.ctx, "workflow", "w", true, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.reloadDisabled(r.ctx, "w"); err != nil {
		t.Fatal(err)
	}
	r.execute("a", "TASK_FINISHED", nil)
	r.round()
	if r.run("w", second).State != workflow.RunSucceeded || r.run("w", third).State != workflow.RunQueued {
		t.Fatal("a queued run began while disabled")
	}
}

// A new leader (a new engine on the same registry, after the old one
// stopped at any point) neither starts a node twice nor loses one.
func TestNewLeaderContinuesWithoutDuplicates(t *testing.T) {
	r := newRig(t, "root", "x", "y", "z", "sink")
	c := workflow.Default()
	c.Name = "fan"
	c.Nodes = []workflow.Node{{ID: "root", Job: "root"}, {ID: "x", Job: "x", DependsOn: []string{"root"}},
		{ID: "y", Job: "y", DependsOn: []string{"root"}}, {ID: "z", Job: "z", DependsOn: []string{"root"}},
		{ID: "sink", Job: "sink", DependsOn: []string{"x", "y", "z"}}}
	r.register(c)
	r.start()
	id := r.trigger("fan", nil)
	r.round()
	r.execute("root", "TASK_FINISHED", nil)
	r.round() // the fan-out: x, y, z queued in one commit
	r.execute("x", "TASK_FINISHED", nil)
	keyY := r.launch("y") // y runs; z still queued
	// Leader change: the old engine is gone; a new one loads the registry.
	r.eng = r.newEngine(r.reg)
	r.start()
	r.start() // and again (a second takeover)
	for _, j := range []string{"y", "z"} {
		if n := len(r.pending(j)); j == "y" && n != 0 || j == "z" && n != 1 {
			t.Fatalf("job %s has %d queued executions after the takeovers", j, n)
		}
	}
	r.end("y", keyY, "TASK_FINISHED", nil)
	r.execute("z", "TASK_FINISHED", nil)
	r.round()
	r.execute("sink", "TASK_FINISHED", nil)
	r.round()
	if run := r.run("fan", id); run.State != workflow.RunSucceeded {
		t.Fatalf("run %s %v", run.State, r.nodeStates(run))
	}
	for _, j := range []string{"root", "x", "y", "z", "sink"} {
		if n := len(r.pending(j)); n != 0 {
			t.Fatalf("%s queued again", j)
		}
	}
}

func TestFencedWriteStopsTheEngine(t *testing.T) {
	r := newRig(t, "a")
	r.register(chain("w", "a"))
	r.start()
	id := r.trigger("w", nil)
	fenced := registry.New(r.kv, registry.Options{Fence: func() []store.Op { return []store.Op{store.Check("/ha/election/gone", store.AnyVersion)} }})
	r.eng = r.newEngine(fenced)
	if err := r.eng.load(r.ctx); err != nil {
		t.Fatal(err)
	}
	err := r.eng.round(r.ctx)
	if !errors.Is(err, registry.ErrFenced) {
		t.Fatalf("round under a lost term: %v", err)
	}
	if run := r.run("w", id); run.State != workflow.RunQueued || len(r.pending("a")) != 0 {
		t.Fatalf("a deposed leader wrote: %s", run.State)
	}
}

func TestCancelKillsRunningSkipsPendingDropsQueued(t *testing.T) {
	r := newRig(t, "a", "b", "c", "d")
	c := workflow.Default()
	c.Name = "w"
	c.Nodes = []workflow.Node{{ID: "a", Job: "a"}, {ID: "b", Job: "b"}, {ID: "c", Job: "c", DependsOn: []string{"a"}}, {ID: "d", Job: "d", DependsOn: []string{"b"}}}
	r.register(c)
	r.start()
	id := r.trigger("w", nil)
	r.round()
	keyA := r.launch("a") // a runs, b waits in its queue
	if _, err := r.reg.Flows().UpdateWorkflowRun(r.ctx, "w", id, func(run workflow.Run) (workflow.Run, error) {
		return workflow.RequestCancel(run, "cancelled by test", r.clk.Now())
	}); err != nil {
		t.Fatal(err)
	}
	r.round()
	r.round()
	if len(r.kills.tasks) != 1 || r.kills.tasks[0] != "a@-@0@-@READY@-@a1@-@"+keyA {
		t.Fatalf("kills %v", r.kills.tasks)
	}
	if n := len(r.pending("b")); n != 0 {
		t.Fatal("b's queued execution was not dropped")
	}
	run := r.run("w", id)
	r.wantStates(run, map[string]workflow.NodeState{"a": workflow.NodeRunning, "b": workflow.NodeCancelled, "c": workflow.NodeSkipped, "d": workflow.NodeSkipped})
	if run.State != workflow.RunRunning || run.Node("d").SkipReason != "cancelled by test" {
		t.Fatalf("%s %q", run.State, run.Node("d").SkipReason)
	}
	r.round() // no second kill within killAgain
	if len(r.kills.tasks) != 1 {
		t.Fatalf("killed again at once: %v", r.kills.tasks)
	}
	r.end("a", keyA, "TASK_KILLED", nil)
	r.round()
	run = r.run("w", id)
	if run.State != workflow.RunCancelled || run.Reason != "cancelled by test" || run.Node("a").State != workflow.NodeCancelled {
		t.Fatalf("%s %q %v", run.State, run.Reason, r.nodeStates(run))
	}
}

func TestLostExecutionFailsTheNodeAfterTwoSweeps(t *testing.T) {
	r := newRig(t, "a", "b")
	c := chain("w", "a", "b")
	c.Nodes[1].Trigger = workflow.AllDone
	r.register(c)
	r.start()
	id := r.trigger("w", nil)
	r.round()
	if err := r.reg.Work().ClearReady(r.ctx, "a"); err != nil { // the job was updated while its execution waited
		t.Fatal(err)
	}
	r.clk.Advance(5 * time.Second)
	r.round() // suspect
	if run := r.run("w", id); run.Node("a").State != workflow.NodeRunning {
		t.Fatal("failed on one sighting")
	}
	r.clk.Advance(5 * time.Second)
	r.round() // lost
	run := r.run("w", id)
	if a := run.Node("a"); a.State != workflow.NodeFailed || a.Message == "" {
		t.Fatalf("a %s %q", a.State, a.Message)
	}
	if run.Node("b").State != workflow.NodeRunning {
		t.Fatal("allDone after a lost node did not start")
	}
}

func TestTimeout(t *testing.T) {
	r := newRig(t, "a", "b")
	c := chain("w", "a", "b")
	c.TimeoutSeconds = 60
	r.register(c)
	r.start()
	id := r.trigger("w", nil)
	r.round()
	key := r.launch("a")
	if w := r.eng.nextWake(); !w.Equal(r.run("w", id).StartedAt.Add(time.Minute)) && w.After(r.run("w", id).StartedAt.Add(time.Minute)) {
		t.Fatalf("next wake %v is after the deadline", w)
	}
	r.clk.Advance(time.Minute)
	if err := r.eng.round(r.ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.kills.tasks) != 1 {
		t.Fatalf("kills %v", r.kills.tasks)
	}
	r.end("a", key, "TASK_KILLED", nil)
	r.round()
	run := r.run("w", id)
	if run.State != workflow.RunFailed || run.Reason != "the run timed out after 60s" || run.Node("b").State != workflow.NodeSkipped {
		t.Fatalf("%s %q %v", run.State, run.Reason, r.nodeStates(run))
	}
}

func TestRetryRunsFailedNodesAgain(t *testing.T) {
	r := newRig(t, "a", "b")
	r.register(chain("w", "a", "b"))
	r.start()
	id := r.trigger("w", nil)
	r.round()
	r.execute("a", "TASK_FINISHED", map[string]string{"k": "v"})
	r.round()
	r.execute("b", "TASK_FAILED", nil)
	r.round()
	if r.run("w", id).State != workflow.RunFailed {
		t.Fatal("not failed")
	}
	if _, err := r.reg.Flows().UpdateWorkflowRun(r.ctx, "w", id, workflow.Retry); err != nil {
		t.Fatal(err)
	}
	r.eng.dirty[runRef{"w", id}] = true
	r.round()
	if len(r.pending("a")) != 0 {
		t.Fatal("a succeeded node ran again")
	}
	runs := r.pending("b")
	if len(runs) != 1 || runs[0].IdempotencyKey != workflow.NodeKey("w", id, "b", 2) {
		t.Fatalf("b's retry %+v", runs)
	}
	r.execute("b", "TASK_FINISHED", nil)
	r.round()
	if run := r.run("w", id); run.State != workflow.RunSucceeded || run.Attempt != 2 {
		t.Fatalf("%s attempt %d", run.State, run.Attempt)
	}
}

func TestNodeOfADeletedJobFailsToStart(t *testing.T) {
	r := newRig(t, "a", "b")
	r.register(chain("w", "a", "b"))
	r.start()
	id := r.trigger("w", nil)
	r.round()
	if err := r.reg.Config().DeleteJob(r.ctx, "b"); err != nil {
		t.Fatal(err)
	}
	r.execute("a", "TASK_FINISHED", nil)
	r.round()
	run := r.run("w", id)
	if b := run.Node("b"); run.State != workflow.RunFailed || b.Message != "could not start: job 'b' no longer exists" {
		t.Fatalf("%s %q", run.State, b.Message)
	}
}

func TestRetentionKeepsTheLatestRunsAndRemovesDeletedWorkflows(t *testing.T) {
	r := newRig(t, "a")
	r.register(chain("w", "a"))
	r.start()
	var ids []string
	for range 5 {
		ids = append(ids, r.trigger("w", nil))
		r.round()
		r.execute("a", "TASK_FINISHED", nil)
		r.clk.Advance(time.Second)
		r.round()
	}
	r.clk.Advance(time.Minute)
	r.round()
	runs, _ := r.reg.Flows().WorkflowRuns(r.ctx, "w")
	if len(runs) != 3 || runs[0].ID != ids[2] {
		t.Fatalf("kept %d runs", len(runs))
	}
	// Delete the workflow with a run active: it is cancelled, then removed.
	id := r.trigger("w", nil)
	r.round()
	if err := r.reg.Flows().DeleteWorkflow(r.ctx, "w", r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.reloadDef(r.ctx, "w"); err != nil {
		t.Fatal(err)
	}
	r.round()
	if run := r.run("w", id); run.State != workflow.RunCancelled {
		t.Fatalf("run of a deleted workflow: %s %v", run.State, r.nodeStates(run))
	}
	r.clk.Advance(time.Minute)
	r.round()
	if names, _ := r.reg.Flows().WorkflowRunNames(r.ctx); len(names) != 0 {
		t.Fatalf("runs of a deleted workflow remain: %v", names)
	}
}

// The whole loop, on its own watches: a trigger through the registry runs
// to its end as the "scheduler" goroutine executes nodes. In a synctest
// bubble, synctest.Wait returns once the loop has followed every change
// and waits again, so each step is checked once, with no watch to poll.
func TestRunLoopFollowsTheRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, "a", "b")
		r.register(chain("w", "a", "b"))
		ctx, cancel := context.WithCancel(r.ctx)
		defer cancel()
		done := make(chan error, 1)
		eng := r.newEngine(r.reg)
		go func() { done <- eng.Run(ctx) }()
		id := r.trigger("w", nil)
		for _, job := range []string{"a", "b"} {
			synctest.Wait()
			if got := r.pending(job); len(got) != 1 {
				t.Fatalf("%s: pending %v, want one execution queued by the loop", job, got)
			}
			if job == "a" && len(r.pending("b")) != 0 {
				t.Fatal("b queued before a ended")
			}
			r.execute(job, "TASK_FINISHED", nil)
		}
		synctest.Wait()
		if run := r.run("w", id); run.State != workflow.RunSucceeded {
			t.Fatalf("run %s %v, want succeeded", run.State, r.nodeStates(run))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestNodeOfAJobWithAFullQueueFailsToStart(t *testing.T) {
	r := newRig(t, "a")
	r.reg = registry.New(r.kv, registry.Options{MaxPending: 1})
	r.eng = r.newEngine(r.reg)
	r.register(chain("w", "a"))
	r.start()
	if _, err := r.reg.Work().Trigger(r.ctx, "a", false, r.clk.Now()); err != nil {
		t.Fatal(err)
	}
	id := r.trigger("w", nil)
	r.round()
	run := r.run("w", id)
	if a := run.Node("a"); run.State != workflow.RunFailed || a.Message != "could not start: job 'a' already has 1 pending executions (job_state_queue_size)" {
		t.Fatalf("%s %q", run.State, a.Message)
	}
}

// A run or a workflow config that is not valid JSON (written by hand, or
// by another version) is left alone: the engine still loads and runs the
// rest, and leading is not given up over it.
func TestUnreadableRegistryValuesAreSkipped(t *testing.T) {
	r := newRig(t, "a")
	r.register(chain("w", "a"))
	id := r.trigger("w", nil)
	if err := r.kv.Commit(r.ctx, store.Put(registry.WorkflowRunsPath+"/w/broken", []byte("{not json")),
		store.Put(registry.WorkflowRunsPath+"/w/legacy", []byte(`{"state":"RUNNING","no`)), // half written
		store.Put(registry.WorkflowRunsPath+"/w", []byte(`{"firedUntil":`)),                // its cron watermark, half written
		store.Put(registry.WorkflowsPath+"/bad", []byte(`{"name": 7}`))); err != nil {
		t.Fatal(err)
	}
	r.eng = r.newEngine(r.reg)
	r.start()
	if run := r.run("w", id); run.State != workflow.RunRunning {
		t.Fatalf("the readable run did not begin: %s", run.State)
	}
	r.eng.dirty[runRef{"w", "broken"}] = true
	r.eng.dirty[runRef{"w", "legacy"}] = true
	if err := r.eng.round(r.ctx); err != nil {
		t.Fatal(err)
	}
}

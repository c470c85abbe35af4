package api_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/workflow"
)

// A run the registry no longer keeps is answered from the history
// database; the history searches list runs and node executions.
func TestWorkflowHistory(t *testing.T) {
	dir := t.TempDir()
	migratedDB(t, filepath.Join(dir, "trace.db"))
	w, err := trace.Open(context.Background(), trace.Options{DSN: filepath.Join(dir, "trace.db"), SpoolDir: filepath.Join(dir, "spool")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	hs, err := history.New(w.Handle(), history.SQLite, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withHistory(hs))
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", wfBody("etl"))
	cfg, _ := e.reg.Flows().Workflow(context.Background(), "etl")

	// A run as the engine ran it, recorded by the history observer.
	obs := trace.NewWorkflowObserver(w)
	run := workflow.NewRun(cfg, "r1", workflow.SourceAPI, nil, "", t0)
	next, _ := workflow.Step(run, true, workflow.Input{Now: t0})
	obs.RunChanged(run, next)
	ok := workflow.Execution{Done: true, Success: true, Shards: []workflow.Shard{{Item: 0, TaskID: "job@-@0@-@READY@-@a@-@1", State: "TASK_FINISHED",
		StartedAt: t0.Add(time.Second), EndedAt: t0.Add(2 * time.Second), Outputs: map[string]string{"rows": "42"}}}}
	prev := next
	next, _ = workflow.Step(prev, false, workflow.Input{Now: t0.Add(3 * time.Second), Executions: map[string]workflow.Execution{"extract": ok}})
	obs.RunChanged(prev, next)
	prev = next
	next, _ = workflow.Step(prev, false, workflow.Input{Now: t0.Add(4 * time.Second), Executions: map[string]workflow.Execution{"clean": ok}})
	obs.RunChanged(prev, next)
	if next.State != workflow.RunSucceeded {
		t.Fatalf("run %s", next.State)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// While the registry keeps the run, it answers; once retention removed it, history does.
	if err := e.reg.Change().CreateWorkflowRun(next).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := decode[struct{ FromHistory bool }](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/etl/runs/r1", "")); v.FromHistory {
		t.Fatal("a kept run was answered from history")
	}
	if err := e.reg.Change().DropWorkflowRun("etl", "r1", store.AnyVersion).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	golden(t, "workflow_run_history", e.must(http.StatusOK, http.MethodGet, "/api/workflow/etl/runs/r1", "").Body)
	e.wantError(e.request(http.MethodGet, "/api/workflow/etl/runs/r2", ""), http.StatusNotFound, "workflow 'etl' has no run 'r2'")

	runs := decode[struct {
		Total int
		Rows  []struct{ RunID, State string }
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/events/runs?workflowName=etl&state=SUCCEEDED", ""))
	if runs.Total != 1 || runs.Rows[0].RunID != "r1" {
		t.Fatalf("run search %+v", runs)
	}
	nodes := decode[struct {
		Total int
		Rows  []struct{ NodeID, State, Outputs string }
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/events/nodes?runId=r1&sort=nodeId&order=asc", ""))
	if nodes.Total != 3 || nodes.Rows[1].NodeID != "clean" || nodes.Rows[2].Outputs != `{"rows":"42"}` || nodes.Rows[0].State != "SKIPPED" {
		t.Fatalf("node search %+v", nodes)
	}
	e.wantError(e.request(http.MethodGet, "/api/workflow/events/nodes?colour=red", ""), http.StatusBadRequest, `unknown filter "colour"`)
}

func TestWorkflowHistoryOff(t *testing.T) {
	e := newEnv(t)
	if got := e.must(http.StatusOK, http.MethodGet, "/api/workflow/events/runs", "").String(); got != `{"total":0,"rows":[]}` {
		t.Fatalf("runs without history: %s", got)
	}
	e.must(http.StatusOK, http.MethodGet, "/api/workflow/events/nodes", "")
}

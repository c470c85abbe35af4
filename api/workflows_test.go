package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// wfBody is a three-node workflow: extract, then clean, and alert when
// either failed (the example).
func wfBody(name string) string {
	return `{"name":"` + name + `","cron":"0 0 2 * * ?","nodes":[{"id":"extract","job":"job"},` +
		`{"id":"clean","job":"job","dependsOn":["extract"]},{"id":"alert","job":"job","dependsOn":["extract","clean"],"trigger":"oneFailed"}]}`
}

func seedWorkflowEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	return e
}

func TestWorkflowRegisterGetList(t *testing.T) {
	e := seedWorkflowEnv(t)
	r := e.must(http.StatusOK, http.MethodPost, "/api/workflow", wfBody("etl"))
	golden(t, "workflow_registered", r.Body)
	e.wantError(e.request(http.MethodPost, "/api/workflow", wfBody("etl")), http.StatusConflict, "Workflow 'etl' already existed.")
	for _, n := range []string{"b", "a", "c"} {
		e.must(http.StatusOK, http.MethodPost, "/api/workflow", `{"name":"`+n+`","nodes":[{"id":"x","job":"job"}]}`)
	}
	got := decode[struct {
		Total int
		Rows  []struct{ Name string }
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/list?page=2&per_page=2", ""))
	if got.Total != 4 || len(got.Rows) != 2 || got.Rows[0].Name != "c" || got.Rows[1].Name != "etl" {
		t.Fatalf("page 2: %+v", got)
	}
	e.wantError(e.request(http.MethodGet, "/api/workflow/list?per_page=0", ""), http.StatusBadRequest, "per_page must be a positive integer")
	// q matches the name, description, cron, a node's id or job (case-insensitive)
	for q, want := range map[string]string{"ET": "etl", "CLEAN": "etl", "0+0+2": "etl", "nothing-like-it": ""} {
		found := decode[struct {
			Total int
			Rows  []struct{ Name string }
		}](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/list?q="+q, ""))
		if names := len(found.Rows); (want == "" && (found.Total != 0 || names != 0)) || (want != "" && (found.Total != 1 || found.Rows[0].Name != want)) {
			t.Errorf("q=%s: %+v, want %q", q, found, want)
		}
	}
	if all := decode[struct{ Total int }](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/list?q=x", "")); all.Total != 4 {
		t.Errorf("q=x (every workflow has node x or extract): total %d, want 4", all.Total)
	}
	// disabled=true|false keeps the disabled or the enabled ones
	e.must(http.StatusNoContent, http.MethodPost, "/api/workflow/b/disable", "")
	for q, want := range map[string]int{"disabled=true": 1, "disabled=false": 3, "disabled=true&q=etl": 0} {
		if got := decode[struct{ Total int }](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/list?"+q, "")); got.Total != want {
			t.Errorf("%s: total %d, want %d", q, got.Total, want)
		}
	}
	e.wantError(e.request(http.MethodGet, "/api/workflow/list?disabled=maybe", ""), http.StatusBadRequest, "disabled must be true or false")
	e.must(http.StatusOK, http.MethodGet, "/api/workflow/etl", "")
	e.wantError(e.request(http.MethodGet, "/api/workflow/nope", ""), http.StatusNotFound, "Cannot find workflow 'nope'")
	e.wantError(e.request(http.MethodGet, "/api/workflow/a..b%20c", ""), http.StatusBadRequest, "workflowName")
}

func TestWorkflowValidationNamesTheField(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", strings.Replace(jobBody("daemon", "app"), `"cron"`, `"jobExecutionType":"DAEMON","cron"`, 1))
	cases := []struct{ body, want string }{
		{`{"name":"w","nodes":[{"id":"a","job":"job","dependsOn":["b"]},{"id":"b","job":"job","dependsOn":["a"]}]}`, "cycle: a → b → a"},
		{`{"name":"w","nodes":[{"id":"a","job":"nope"}]}`, "nodes[0].job: job 'nope' does not exist"},
		{`{"name":"w","nodes":[{"id":"a","job":"daemon"}]}`, "nodes[0].job: job 'daemon' is a DAEMON job"},
		{`{"name":"w","nodes":[{"id":"a","job":"job"},{"id":"a","job":"job"}]}`, "nodes[1].id: duplicate node id 'a'"},
		{`{"name":"w","nodes":[{"id":"a","job":"job","dependsOn":["zz"]}]}`, "depends on 'zz', which is not a node"},
		{`{"name":"w","nodes":[{"id":"a","job":"job"},{"id":"b","job":"job","dependsOn":["a"],"trigger":"whenever"}]}`, `unknown trigger rule "whenever"`},
		{`{"name":"w","nodes":[{"id":"a","job":"job"}],"colour":"red"}`, `unknown field "colour"`},
		{`{"name":"list","nodes":[{"id":"a","job":"job"}]}`, "reserved"},
		{`{"name":"w","nodes":[]}`, "at least one node"},
	}
	for _, tc := range cases {
		e.wantError(e.request(http.MethodPost, "/api/workflow", tc.body), http.StatusBadRequest, tc.want)
	}
	e.wantError(e.request(http.MethodPut, "/api/workflow", wfBody("ghost")), http.StatusNotFound, "Cannot find workflow 'ghost'")
}

func TestWorkflowUpdateDisableDelete(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", wfBody("etl"))
	r := e.must(http.StatusOK, http.MethodPut, "/api/workflow", `{"name":"etl","maxConcurrentRuns":3,"nodes":[{"id":"only","job":"job"}]}`)
	v := decode[struct {
		MaxConcurrentRuns int
		Cron              string
		Nodes             []struct{ ID, Trigger string }
	}](t, r)
	if v.MaxConcurrentRuns != 3 || v.Cron != "" || len(v.Nodes) != 1 || v.Nodes[0].Trigger != "allSucceeded" {
		t.Fatalf("update replaces the whole definition: %+v", v)
	}
	e.must(http.StatusNoContent, http.MethodPost, "/api/workflow/etl/disable", "")
	if !strings.Contains(e.must(http.StatusOK, http.MethodGet, "/api/workflow/etl", "").String(), `"disabled":true`) {
		t.Fatal("not disabled")
	}
	e.wantError(e.request(http.MethodPost, "/api/workflow/etl/trigger", ""), http.StatusConflict, "workflow 'etl' is disabled")
	e.must(http.StatusNoContent, http.MethodPost, "/api/workflow/etl/enable", "")
	run := decode[struct{ RunID string }](t, e.must(http.StatusOK, http.MethodPost, "/api/workflow/etl/trigger", ""))
	e.must(http.StatusNoContent, http.MethodDelete, "/api/workflow/etl", "")
	e.wantError(e.request(http.MethodGet, "/api/workflow/etl", ""), http.StatusNotFound)
	e.wantError(e.request(http.MethodDelete, "/api/workflow/etl", ""), http.StatusNotFound)
	// The active run is asked to cancel; the leader ends and removes it.
	left, err := e.reg.Flows().WorkflowRun(context.Background(), "etl", run.RunID)
	if err != nil || left.Cancel == nil || left.Cancel.Reason != "the workflow was deleted" {
		t.Fatalf("run after delete: %+v %v", left.Cancel, err)
	}
}

func TestWorkflowTrigger(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", wfBody("etl"))
	type trig struct {
		RunID     string
		Duplicate bool
		State     string
	}
	a := decode[trig](t, e.must(http.StatusOK, http.MethodPost, "/api/workflow/etl/trigger", `{"parameter":"day=1","idempotencyKey":"k-1"}`))
	b := decode[trig](t, e.must(http.StatusOK, http.MethodPost, "/api/workflow/etl/trigger", `{"parameter":"ignored","idempotencyKey":"k-1"}`))
	if a.RunID == "" || a.Duplicate || a.State != "QUEUED" || b.RunID != a.RunID || !b.Duplicate {
		t.Fatalf("idempotent trigger: %+v then %+v", a, b)
	}
	run, err := e.reg.Flows().WorkflowRun(context.Background(), "etl", a.RunID)
	if err != nil || *run.Parameter != "day=1" || run.Source != workflow.SourceAPI || len(run.Nodes) != 3 {
		t.Fatalf("stored run %+v %v", run, err)
	}
	e.must(http.StatusOK, http.MethodPost, "/api/workflow/etl/trigger", "")
	e.wantError(e.request(http.MethodPost, "/api/workflow/etl/trigger", `{"idempotencyKey":"bad key"}`), http.StatusBadRequest, "idempotencyKey")
	e.wantError(e.request(http.MethodPost, "/api/workflow/etl/trigger", `{"parameter":"`+strings.Repeat("p", 5000)+`"}`), http.StatusBadRequest, "parameter must be at most 4096 bytes")
	e.wantError(e.request(http.MethodPost, "/api/workflow/etl/trigger", `{"param":"x"}`), http.StatusBadRequest, `unknown field "param"`)
	e.wantError(e.request(http.MethodPost, "/api/workflow/none/trigger", ""), http.StatusNotFound)
	list := decode[struct {
		Total int
		Rows  []struct{ RunID, State string }
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/etl/runs?state=queued", ""))
	if list.Total != 2 {
		t.Fatalf("queued runs: %+v", list)
	}
	if got := decode[struct{ Total int }](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/etl/runs?state=FAILED,SUCCEEDED", "")); got.Total != 0 {
		t.Fatalf("finished runs: %+v", got)
	}
	e.wantError(e.request(http.MethodGet, "/api/workflow/etl/runs?state=DONE", ""), http.StatusBadRequest, `state "DONE" is not a run state`)
	e.wantError(e.request(http.MethodGet, "/api/workflow/nope/runs", ""), http.StatusNotFound)
}

// putRun stores a run as the leader's engine would have left it.
func putRun(t *testing.T, reg *registry.Registry, run workflow.Run) {
	t.Helper()
	if err := reg.Change().CreateWorkflowRun(run).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWorkflowRunDetailCancelRetry(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", wfBody("etl"))
	cfg, _ := e.reg.Flows().Workflow(context.Background(), "etl")
	// A running run: extract succeeded with outputs, clean runs (one
	// shard's task running), alert waits.
	run := workflow.NewRun(cfg, "r1", workflow.SourceCron, nil, "", t0)
	run, _ = workflow.Step(run, true, workflow.Input{Now: t0})
	out := workflow.Execution{Done: true, Success: true, Shards: []workflow.Shard{{Item: 0, TaskID: "job@-@0@-@READY@-@a1@-@u0", State: "TASK_FINISHED",
		StartedAt: t0.Add(time.Second), EndedAt: t0.Add(2 * time.Second), Outputs: map[string]string{"rows": "42"}}}}
	run, _ = workflow.Step(run, false, workflow.Input{Now: t0.Add(3 * time.Second), Executions: map[string]workflow.Execution{"extract": out}})
	putRun(t, e.reg, run)
	clean := run.Node("clean")
	rt := task.Entry{TaskID: "job@-@1@-@READY@-@a1@-@u1", AgentID: "a1", Hostname: "host-1", State: "TASK_RUNNING", RunKey: clean.RunKey, LaunchedAt: t0.Add(4 * time.Second)}
	if err := e.reg.Change().Launch("job", 1, rt).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The node's record as the store holds it (raw: its JSON is the layout under test).
	if err := e.kv.Commit(context.Background(), store.Put(registry.TriggerKeysPath+"/"+clean.RunKey, []byte(`{"jobName":"job","at":"2024-03-01T12:00:03Z","workflow":"etl/r1/clean",`+
		`"shards":[{"shardingItem":0,"taskId":"job@-@0@-@READY@-@a1@-@u2","state":"TASK_FINISHED","outputs":{"k":"v"}}]}`))); err != nil {
		t.Fatal(err)
	}
	golden(t, "workflow_run_running", e.must(http.StatusOK, http.MethodGet, "/api/workflow/etl/runs/r1", "").Body)
	e.wantError(e.request(http.MethodGet, "/api/workflow/etl/runs/r9", ""), http.StatusNotFound, "workflow 'etl' has no run 'r9'")
	e.wantError(e.request(http.MethodPost, "/api/workflow/etl/runs/r1/retry", ""), http.StatusConflict, "is RUNNING; only a run that failed or was cancelled can be retried")

	// Cancel: the request is stored; the leader carries it out.
	r := decode[struct {
		State      string
		Cancelling bool
		Cancel     struct{ Reason string }
	}](t, e.must(http.StatusOK, http.MethodPost, "/api/workflow/etl/runs/r1/cancel", ""))
	if r.State != "RUNNING" || !r.Cancelling || !strings.HasPrefix(r.Cancel.Reason, "cancelled by anonymous at ") {
		t.Fatalf("cancel answer %+v", r)
	}
	// The leader ends it: clean killed, alert skipped.
	stored, _ := e.reg.Flows().WorkflowRun(context.Background(), "etl", "r1")
	killed := workflow.Execution{Done: true, Shards: []workflow.Shard{{Item: 0, State: "TASK_KILLED"}}}
	ended, _ := workflow.Step(stored, false, workflow.Input{Now: t0.Add(time.Minute), Executions: map[string]workflow.Execution{"clean": killed}})
	if err := e.reg.Change().PutWorkflowRun(ended).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.request(http.MethodPost, "/api/workflow/etl/runs/r1/cancel", ""), http.StatusConflict, "already ended CANCELLED")
	rr := decode[struct {
		State   string
		Attempt int
		Nodes   []struct{ ID, State string }
	}](t, e.must(http.StatusOK, http.MethodPost, "/api/workflow/etl/runs/r1/retry", ""))
	if rr.State != "QUEUED" || rr.Attempt != 2 || rr.Nodes[0].State != "SUCCEEDED" || rr.Nodes[1].State != "PENDING" || rr.Nodes[2].State != "PENDING" {
		t.Fatalf("retry answer %+v", rr)
	}
}

func TestWorkflowQueuedNodeShowsQueued(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", `{"name":"one","nodes":[{"id":"a","job":"job"}]}`)
	cfg, _ := e.reg.Flows().Workflow(context.Background(), "one")
	run, acts := workflow.Step(workflow.NewRun(cfg, "r1", workflow.SourceAPI, nil, "", t0), true, workflow.Input{Now: t0})
	ch := e.reg.Change()
	if err := ch.QueueNodes(context.Background(), "job", []registry.NodeStart{{Key: acts[0].Key, Owner: "one/r1/a"}}, t0); err != nil {
		t.Fatal(err)
	}
	if err := ch.CreateWorkflowRun(run).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := decode[struct {
		NodeStates map[string]int
		Nodes      []struct{ State string }
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/one/runs/r1", ""))
	if v.Nodes[0].State != "QUEUED" || v.NodeStates["QUEUED"] != 1 {
		t.Fatalf("%+v", v)
	}
}

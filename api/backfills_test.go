package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
)

type backfillReply struct {
	ID       string `json:"id"`
	JobName  string `json:"jobName"`
	State    string `json:"state"`
	Progress struct {
		Done, Running, Remaining, Failed, Total int
	} `json:"progress"`
}

// TestBackfillAPI: a backfill of a past hour of a ten-minute job holds six
// instants; it lists, reads, pauses, resumes and cancels; bad requests
// name what is wrong; another namespace neither sees nor controls it.
func TestBackfillAPI(t *testing.T) {
	e := newEnv(t) // the clock stands at t0 = 2024-03-01T12:00:00Z
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("report", "app"))

	b := decode[backfillReply](t, e.must(http.StatusCreated, http.MethodPost, "/api/job/backfills",
		`{"jobName":"report","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z","concurrency":2}`))
	if b.ID == "" || b.State != "RUNNING" || b.Progress.Total != 6 || b.Progress.Remaining != 6 {
		t.Fatalf("created %+v", b)
	}
	list := decode[[]backfillReply](t, e.must(http.StatusOK, http.MethodGet, "/api/job/backfills?jobName=report", ""))
	if len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("list %+v", list)
	}
	for _, step := range []struct{ action, want string }{{"pause", "PAUSED"}, {"resume", "RUNNING"}, {"cancel", "CANCELLED"}} {
		got := decode[backfillReply](t, e.must(http.StatusOK, http.MethodPost, "/api/job/backfills/"+b.ID+"/"+step.action, ""))
		if got.State != step.want {
			t.Fatalf("%s: %+v", step.action, got)
		}
	}
	got := decode[backfillReply](t, e.must(http.StatusOK, http.MethodGet, "/api/job/backfills/"+b.ID, ""))
	if got.State != "CANCELLED" || got.Progress.Remaining != 0 {
		t.Fatalf("after cancel %+v", got)
	}
	e.wantError(e.request(http.MethodPost, "/api/job/backfills/"+b.ID+"/resume", ""), http.StatusConflict, "CANCELLED")
	e.wantError(e.request(http.MethodPost, "/api/job/backfills/"+b.ID+"/explode", ""), http.StatusNotFound, "pause, resume or cancel")
	e.wantError(e.request(http.MethodGet, "/api/job/backfills/bf-nope", ""), http.StatusNotFound, "bf-nope")

	for _, c := range []struct{ body, sub string }{
		{`{"jobName":"report","from":"2024-03-01T10:00:00Z","to":"2024-03-01T09:00:00Z"}`, "must be after"},
		{`{"jobName":"report","from":"2024-03-01T11:00:00Z","to":"2024-03-01T13:00:00Z"}`, "in the future"},
		{`{"jobName":"report","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z","concurrency":1000}`, "concurrency"},
		{`{"jobName":"report","from":"2024-03-01T09:01:00Z","to":"2024-03-01T09:05:00Z"}`, "no instant"},
		{`{"jobName":"report","from":"2023-01-01T00:00:00Z","to":"2024-03-01T00:00:00Z"}`, "more than"},
		{`{"jobName":"report","from":"yesterday"}`, "RFC 3339"},
		{`{"from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`, "jobName"},
	} {
		e.wantError(e.request(http.MethodPost, "/api/job/backfills", c.body), http.StatusBadRequest, c.sub)
	}
	e.wantError(e.request(http.MethodPost, "/api/job/backfills", `{"jobName":"ghost","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`),
		http.StatusNotFound, "ghost")

	if _, err := e.reg.Tenancy().PutNamespace(t.Context(), namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	if got := decode[[]backfillReply](t, e.must(http.StatusOK, http.MethodGet, "/api/job/backfills?namespace=pay", "")); len(got) != 0 {
		t.Fatalf("another namespace sees %+v", got)
	}
	e.wantError(e.request(http.MethodGet, "/api/job/backfills/"+b.ID+"?namespace=pay", ""), http.StatusNotFound, b.ID)
	e.wantError(e.request(http.MethodPost, "/api/job/backfills/"+b.ID+"/pause?namespace=pay", ""), http.StatusNotFound, b.ID)
	_ = time.Second
}

// TestBackfillConfirmsALargeRange: a range of more than 1000 runs (a
// mistyped year) is refused with its count until maxRuns confirms it; a
// maxRuns below the count is refused too.
func TestBackfillConfirmsALargeRange(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("report", "app"))
	const rng = `"jobName":"report","from":"2024-01-01T00:00:00Z","to":"2024-03-01T00:00:00Z"` // 60 days of a ten-minute job
	e.wantError(e.request(http.MethodPost, "/api/job/backfills", "{"+rng+"}"), http.StatusBadRequest, "maxRuns 8640")
	e.wantError(e.request(http.MethodPost, "/api/job/backfills", "{"+rng+`,"maxRuns":100}`), http.StatusBadRequest, "more than maxRuns 100")
	b := decode[backfillReply](t, e.must(http.StatusCreated, http.MethodPost, "/api/job/backfills", "{"+rng+`,"maxRuns":8640}`))
	if b.Progress.Total != 8640 {
		t.Fatalf("created %+v", b)
	}
}

type wfBackfillReply struct {
	ID           string `json:"id"`
	JobName      string `json:"jobName"`
	WorkflowName string `json:"workflowName"`
	State        string `json:"state"`
	Progress     struct{ Total, Remaining int }
}

// TestWorkflowBackfillAPI: a backfill of a past hour of a workflow on a
// ten-minute cron holds six instants, lists by workflowName, pauses and
// cancels; a workflow without a cron, a disabled one, one naming both a
// job and a workflow, and a missing one are refused; another namespace
// neither sees nor controls it (404).
func TestWorkflowBackfillAPI(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", `{"name":"nightly","cron":"0 */10 * * * ?","nodes":[{"id":"x","job":"job"}]}`)
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", `{"name":"adhoc","nodes":[{"id":"x","job":"job"}]}`)
	b := decode[wfBackfillReply](t, e.must(http.StatusCreated, http.MethodPost, "/api/job/backfills",
		`{"workflowName":"nightly","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z","concurrency":2}`))
	if b.ID == "" || b.WorkflowName != "nightly" || b.JobName != "" || b.State != "RUNNING" || b.Progress.Total != 6 {
		t.Fatalf("created %+v", b)
	}
	if list := decode[[]wfBackfillReply](t, e.must(http.StatusOK, http.MethodGet, "/api/job/backfills?workflowName=nightly", "")); len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("list %+v", list)
	}
	if list := decode[[]wfBackfillReply](t, e.must(http.StatusOK, http.MethodGet, "/api/job/backfills?workflowName=adhoc", "")); len(list) != 0 {
		t.Fatalf("list of another workflow %+v", list)
	}
	if got := decode[wfBackfillReply](t, e.must(http.StatusOK, http.MethodPost, "/api/job/backfills/"+b.ID+"/pause", "")); got.State != "PAUSED" {
		t.Fatalf("pause %+v", got)
	}
	for _, c := range []struct{ body, sub string }{
		{`{"workflowName":"adhoc","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`, "no cron"},
		{`{"workflowName":"nightly","jobName":"job","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`, "either"},
		{`{"workflowName":"nightly","from":"2024-03-01T09:01:00Z","to":"2024-03-01T09:05:00Z"}`, "no instant"},
		{`{"workflowName":"nightly","from":"2024-03-01T11:00:00Z","to":"2024-03-01T13:00:00Z"}`, "in the future"},
	} {
		e.wantError(e.request(http.MethodPost, "/api/job/backfills", c.body), http.StatusBadRequest, c.sub)
	}
	e.wantError(e.request(http.MethodPost, "/api/job/backfills", `{"workflowName":"ghost","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`),
		http.StatusNotFound, "ghost")
	e.must(http.StatusNoContent, http.MethodPost, "/api/workflow/nightly/disable", "")
	e.wantError(e.request(http.MethodPost, "/api/job/backfills", `{"workflowName":"nightly","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`),
		http.StatusConflict, "disabled")

	if _, err := e.reg.Tenancy().PutNamespace(t.Context(), namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	if got := decode[[]wfBackfillReply](t, e.must(http.StatusOK, http.MethodGet, "/api/job/backfills?namespace=pay&workflowName=nightly", "")); len(got) != 0 {
		t.Fatalf("another namespace sees %+v", got)
	}
	e.wantError(e.request(http.MethodGet, "/api/job/backfills/"+b.ID+"?namespace=pay", ""), http.StatusNotFound, b.ID)
	e.wantError(e.request(http.MethodPost, "/api/job/backfills/"+b.ID+"/cancel?namespace=pay", ""), http.StatusNotFound, b.ID)
	e.wantError(e.request(http.MethodPost, "/api/job/backfills?namespace=pay", `{"workflowName":"nightly","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`),
		http.StatusNotFound, "nightly")
	if got := decode[wfBackfillReply](t, e.must(http.StatusOK, http.MethodPost, "/api/job/backfills/"+b.ID+"/cancel", "")); got.State != "CANCELLED" {
		t.Fatalf("cancel %+v", got)
	}
}

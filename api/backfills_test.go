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

	if _, err := e.reg.PutNamespace(t.Context(), namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	if got := decode[[]backfillReply](t, e.must(http.StatusOK, http.MethodGet, "/api/job/backfills?namespace=pay", "")); len(got) != 0 {
		t.Fatalf("another namespace sees %+v", got)
	}
	e.wantError(e.request(http.MethodGet, "/api/job/backfills/"+b.ID+"?namespace=pay", ""), http.StatusNotFound, b.ID)
	e.wantError(e.request(http.MethodPost, "/api/job/backfills/"+b.ID+"/pause?namespace=pay", ""), http.StatusNotFound, b.ID)
	_ = time.Second
}

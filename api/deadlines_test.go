package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
)

// TestJobDeadlines: the REST API and a CloudJob's spec take the deadline
// fields, and refuse bad ones with the field named.
func TestJobDeadlines(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	body := `{"jobName":"report","appName":"app","jobExecutionType":"TRANSIENT","cron":"0 0 6 * * ?","cpuCount":0.5,"memoryMB":32,` +
		`"startDeadlineSeconds":300,"runDeadlineSeconds":3600,"runDeadlineAt":"07:30"}`
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", body)
	got := decode[jobs.Config](t, e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/report", ""))
	if got.StartDeadlineSeconds != 300 || got.RunDeadlineSeconds != 3600 || got.RunDeadlineAt != "07:30" {
		t.Fatalf("stored %+v", got)
	}
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"report","runDeadlineAt":"7:30pm"}`), http.StatusBadRequest, "runDeadlineAt")
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"report","startDeadlineSeconds":-5}`), http.StatusBadRequest, "startDeadlineSeconds")

	_, srv := newDefEnv(t)
	spec := strings.Replace(defJob, `"shardingTotalCount":1`, `"shardingTotalCount":1,"startDeadlineSeconds":60,"runDeadlineAt":"23:00"`, 1)
	if _, err := srv.ApplyDefinition(context.Background(), api.DefJob, "default", "hello", []byte(spec), registry.Owner{Kind: "CloudJob", Namespace: "default", Name: "hello"}); err != nil {
		t.Fatalf("CloudJob with deadlines: %v", err)
	}
}

// TestMissedDeadlinesList: GET /api/job/deadlines lists the recorded
// alerts of the request's namespace, soonest due first, by job on ask.
func TestMissedDeadlinesList(t *testing.T) {
	e := newEnv(t)
	for _, a := range []observe.DeadlineAlert{
		{Kind: observe.DeadlineRun, Namespace: "default", Job: "etl", Since: t0, Due: t0.Add(2 * time.Hour), TaskID: "t1", Message: "long"},
		{Kind: observe.DeadlineStart, Namespace: "default", Job: "report", Since: t0, Due: t0.Add(time.Minute), Message: "late"},
		{Kind: observe.DeadlineStart, Namespace: "other", Job: "report", Since: t0, Due: t0, Message: "not ours"},
	} {
		b, _ := json.Marshal(a)
		if ok, err := e.reg.Schedule().MarkAlert(t.Context(), a.PathKey(), b); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	rows := decode[[]observe.DeadlineAlert](t, e.must(http.StatusOK, http.MethodGet, "/api/job/deadlines", ""))
	if len(rows) != 2 || rows[0].Job != "report" || rows[1].Job != "etl" || rows[1].TaskID != "t1" {
		t.Fatalf("%+v", rows)
	}
	rows = decode[[]observe.DeadlineAlert](t, e.must(http.StatusOK, http.MethodGet, "/api/job/deadlines?jobName=etl", ""))
	if len(rows) != 1 || rows[0].Kind != observe.DeadlineRun {
		t.Fatalf("%+v", rows)
	}
}

// TestWorkflowDeadlines: a workflow takes the deadline fields and refuses
// bad ones with the field named.
func TestWorkflowDeadlines(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/workflow",
		`{"name":"nightly","nodes":[{"id":"x","job":"job"}],"startDeadlineSeconds":600,"runDeadlineSeconds":3600,"runDeadlineAt":"06:00"}`)
	got := decode[struct {
		StartDeadlineSeconds, RunDeadlineSeconds int
		RunDeadlineAt                            string
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/workflow/nightly", ""))
	if got.StartDeadlineSeconds != 600 || got.RunDeadlineSeconds != 3600 || got.RunDeadlineAt != "06:00" {
		t.Fatalf("%+v", got)
	}
	e.wantError(e.request(http.MethodPost, "/api/workflow", `{"name":"bad","nodes":[{"id":"x","job":"job"}],"runDeadlineSeconds":604801}`),
		http.StatusBadRequest, "runDeadlineSeconds")
}

package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

func appBody(name string) string {
	return `{"appName":"` + name + `","appURL":"file:///opt/apps/` + name + `.tar.gz","bootstrapScript":"bin/start.sh"}`
}

func jobBody(name, app string) string {
	return `{"jobName":"` + name + `","appName":"` + app + `","cron":"0 0/10 * * * ?","shardingTotalCount":2,` +
		`"shardingItemParameters":"0=Beijing,1=Shanghai","jobParameter":"p","cpuCount":0.5,"memoryMB":32,` +
		`"description":"d","props":{"script.command.line":"bin/run.sh"}}`
}

func TestAppCRUD(t *testing.T) {
	e := newEnv(t)
	// Defaults fill the optional fields.
	r := e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("b_app"))
	golden(t, "app_defaults", r.Body)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("a_app"))
	e.wantError(e.request(http.MethodPost, "/api/app", appBody("a_app")), http.StatusConflict, "App 'a_app' already existed.")

	// Both list forms, sorted by name.
	for _, path := range []string{"/api/app/list", "/api/app"} {
		r := e.must(http.StatusOK, http.MethodGet, path, "")
		golden(t, "app_list", r.Body)
	}

	// A partial PUT keeps the other fields.
	r = e.must(http.StatusOK, http.MethodPut, "/api/app", `{"appName":"a_app","appCacheEnable":false,"eventTraceSamplingCount":7,"cpuCount":2}`)
	got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/app/a_app", ""))
	want := map[string]any{"appName": "a_app", "appURL": "file:///opt/apps/a_app.tar.gz", "bootstrapScript": "bin/start.sh",
		"cpuCount": 2.0, "memoryMB": 128.0, "appCacheEnable": false, "eventTraceSamplingCount": 7.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("after PUT, %s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("app has fields %v, want exactly %v", got, want)
	}
	e.wantError(e.request(http.MethodPut, "/api/app", `{"appName":"nope","appCacheEnable":true}`), http.StatusNotFound, "Cannot find app 'nope', please publish first.")
	e.wantError(e.request(http.MethodPut, "/api/app", `{"appName":"a_app","cpuCount":0}`), http.StatusBadRequest, "cpuCount")
	e.wantError(e.request(http.MethodPut, "/api/app", `{"appCacheEnable":true}`), http.StatusBadRequest, "appName is required")

	e.must(http.StatusNoContent, http.MethodDelete, "/api/app/a_app", "")
	e.wantError(e.request(http.MethodGet, "/api/app/a_app", ""), http.StatusNotFound, "Cannot find app 'a_app'")
	e.wantError(e.request(http.MethodDelete, "/api/app/a_app", ""), http.StatusNotFound, "Cannot find app 'a_app'")
}

func TestJobCRUD(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	r := e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job_b", "app"))
	golden(t, "job_full", r.Body)
	r = e.must(http.StatusOK, http.MethodPost, "/api/job/register", `{"jobName":"job_a","appName":"app"}`)
	golden(t, "job_defaults", r.Body)

	r = e.must(http.StatusOK, http.MethodGet, "/api/job/jobs", "")
	jobsList := decode[[]map[string]any](t, r)
	if len(jobsList) != 2 || jobsList[0]["jobName"] != "job_a" || jobsList[1]["jobName"] != "job_b" {
		t.Fatalf("GET /api/job/jobs = %s, want job_a then job_b", r.Body)
	}
	golden(t, "job_full", e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/job_b", "").Body)

	// Update merges; a props object replaces the props whole.
	e.must(http.StatusOK, http.MethodPut, "/api/job/update", `{"jobName":"job_b","shardingTotalCount":3,"props":{"streaming.process":"true"}}`)
	got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/job_b", ""))
	if got["shardingTotalCount"] != 3.0 || got["jobParameter"] != "p" || got["cron"] != "0 0/10 * * * ?" {
		t.Errorf("after update: %v", got)
	}
	if props, _ := got["props"].(map[string]any); len(props) != 1 || props["streaming.process"] != "true" {
		t.Errorf("after update props = %v, want only streaming.process", got["props"])
	}
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"ghost","cron":"0 * * * * ?"}`), http.StatusNotFound, "Cannot find job 'ghost', please register first.")
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"job_b","appName":"ghost_app"}`), http.StatusNotFound, "Cannot find app 'ghost_app'")
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"job_b","shardingTotalCount":1}`), http.StatusBadRequest, "shardingItemParameters")
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"cron":"0 * * * * ?"}`), http.StatusBadRequest, "jobName is required")

	// DELETE /api/job/{name}/deregister.
	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/job_a/deregister", "")
	e.wantError(e.request(http.MethodDelete, "/api/job/job_a/deregister", ""), http.StatusNotFound, "Cannot find job 'job_a'")
	e.wantError(e.request(http.MethodGet, "/api/job/jobs/job_a", ""), http.StatusNotFound, "Cannot find job 'job_a'")
}

func TestDisableEnable(t *testing.T) {
	for _, kind := range []struct{ kind, path string }{{"app", "/api/app/app"}, {"job", "/api/job/job"}} {
		t.Run(kind.kind, func(t *testing.T) {
			e := newEnv(t)
			e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
			e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
			isDisabled := func() string {
				t.Helper()
				return string(e.must(http.StatusOK, http.MethodGet, kind.path+"/disable", "").Body)
			}
			if got := isDisabled(); got != "false" {
				t.Errorf("GET disable = %s, want false", got)
			}
			e.must(http.StatusNoContent, http.MethodPost, kind.path+"/disable", "")
			if got := isDisabled(); got != "true" {
				t.Errorf("GET disable after disable = %s, want true", got)
			}
			disabled, err := e.reg.Config().IsDisabled(t.Context(), kind.kind, kind.kind)
			if err != nil || !disabled {
				t.Errorf("registry IsDisabled = %v, %v; want true", disabled, err)
			}
			// A disabled job (or a job of a disabled app) cannot be triggered.
			e.wantError(e.request(http.MethodPost, "/api/job/trigger", "job"), http.StatusConflict, "disabled")
			wakes := e.ops.Wakes()
			e.must(http.StatusNoContent, http.MethodPost, kind.path+"/enable", "")
			if got := isDisabled(); got != "false" {
				t.Errorf("GET disable after enable = %s, want false", got)
			}
			if e.ops.Wakes() != wakes+1 {
				t.Errorf("enable did not wake the scheduler")
			}
			e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "job")

			missing := map[string]string{"app": "/api/app/ghost", "job": "/api/job/ghost"}[kind.kind]
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				e.wantError(e.request(m, missing+"/disable", ""), http.StatusNotFound, "ghost")
			}
			e.wantError(e.request(http.MethodPost, missing+"/enable", ""), http.StatusNotFound, "ghost")
		})
	}
}

func TestDeleteAppRemovesItsJobs(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("other"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("j1", "app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("j2", "app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("keep", "other"))
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "j1")
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/j2/disable", "")
	e.must(http.StatusNoContent, http.MethodPost, "/api/app/app/disable", "")

	e.must(http.StatusNoContent, http.MethodDelete, "/api/app/app", "")
	jobsList := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/jobs", ""))
	if len(jobsList) != 1 || jobsList[0]["jobName"] != "keep" {
		t.Errorf("jobs after deleting app = %v, want only keep", jobsList)
	}
	if r := e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""); string(r.Body) != "[]" {
		t.Errorf("ready queue after deleting app = %s, want []", r.Body)
	}
	for _, kind := range []string{"app", "job"} {
		d, err := e.reg.Config().Disabled(t.Context(), kind)
		if err != nil || len(d) != 0 {
			t.Errorf("disabled %ss after delete = %v, %v; want none", kind, d, err)
		}
	}
	// Re-publishing the app starts clean.
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("j1", "app"))
	if r := e.must(http.StatusOK, http.MethodGet, "/api/app/app/disable", ""); string(r.Body) != "false" {
		t.Errorf("re-published app disabled = %s", r.Body)
	}
}

func TestTaskViews(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	for _, r := range []string{"/api/job/tasks/running", "/api/job/tasks/ready", "/api/job/tasks/failover"} {
		if got := e.must(http.StatusOK, http.MethodGet, r, "").Body; string(got) != "[]" {
			t.Errorf("empty %s = %s, want []", r, got)
		}
	}
	launched := t0.Add(-time.Minute)
	tid := func(job string, item int, kind string) string {
		return job + "@-@" + strconv.Itoa(item) + "@-@" + kind + "@-@agent-1@-@00000000-0000-0000-0000-00000000000" + strconv.Itoa(item)
	}
	err := e.reg.Change().
		Launch("job_b", 1, task.Entry{TaskID: tid("job_b", 1, "READY"), AgentID: "agent-1", Hostname: "host-1",
			ExecutorID: "app@-@agent-1", State: "TASK_RUNNING", LaunchedAt: launched, UpdatedAt: t0}).
		Launch("job_b", 0, task.Entry{TaskID: tid("job_b", 0, "READY"), AgentID: "agent-1", Hostname: "host-1",
			ExecutorID: "app@-@agent-1", State: "TASK_STAGING", LaunchedAt: launched, UpdatedAt: t0}).
		Launch("job_a", 2, task.Entry{TaskID: tid("job_a", 2, "FAILOVER"), AgentID: "agent-2", Hostname: "host-2",
			ExecutorID: "app@-@agent-2", State: "TASK_RUNNING", LaunchedAt: t0, UpdatedAt: t0}).
		FailOver("job_c", 3, queue.Failover{TaskID: tid("job_c", 3, "READY"), Since: t0, Attempts: 1}).
		FailOver("job_c", 1, queue.Failover{TaskID: tid("job_c", 1, "READY"), Since: t0}).
		FailOver("job_a", 0, queue.Failover{TaskID: tid("job_a", 0, "READY"), Since: launched}).
		Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tasks_running", e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/running", "").Body)
	golden(t, "tasks_failover", e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/failover", "").Body)
}

// TestRunningTasksListRetiring: a DAEMON shard in an overlapping move is listed with both
// its tasks, its current one first and the old one marked retiring with its bounds.
func TestRunningTasksListRetiring(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	old := task.Entry{TaskID: "d@-@0@-@READY@-@@-@01000000-0000-8000-8000-000000000001", AgentID: "mesos:agent-1", Hostname: "host-1",
		State: "TASK_RUNNING", LaunchedAt: t0.Add(-time.Hour), UpdatedAt: t0}
	if err := e.reg.Change().Launch("d", 0, old).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	running, err := e.reg.Work().RunningOf(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	ch := e.reg.Change()
	if err := ch.Retire(ctx, "d", 0, running[0], t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := ch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cur := task.Entry{TaskID: "d@-@0@-@READY@-@@-@01000000-0000-8000-8000-000000000002", AgentID: "k8s:agent-1", Hostname: "host-2",
		State: "TASK_STAGING", LaunchedAt: t0, UpdatedAt: t0}
	if err := e.reg.Change().Launch("d", 0, cur).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		TaskID        string     `json:"taskId"`
		Retiring      bool       `json:"retiring"`
		RetiringSince *time.Time `json:"retiringSince"`
		StartBy       *time.Time `json:"startBy"`
	}
	if err := json.Unmarshal(e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/running", "").Body, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].TaskID != cur.TaskID || rows[0].Retiring || rows[0].StartBy != nil ||
		rows[1].TaskID != old.TaskID || !rows[1].Retiring || !rows[1].RetiringSince.Equal(t0) || !rows[1].StartBy.Equal(t0.Add(time.Minute)) {
		t.Fatalf("running rows %+v", rows)
	}
	if ready, _ := e.reg.Work().ReadyQueue(ctx); len(ready) != 1 || ready[0].Job != "d" {
		t.Fatalf("the retirement queued %+v, want d's relaunch", ready)
	}
}

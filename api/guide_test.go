package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// The practice guide's calls (reference 002 §3.3.2, §7.2.2).
const (
	// §3.3.2's register body as written, plus the start script that makes
	// the jar runnable (without it the answer says to send one).
	guideRegisterBody = `{
  "jobName": "data-sync-job",
  "jobClass": "com.example.DataSyncJob",
  "cron": "0 0 2 * * ?",
  "shardingTotalCount": 4,
  "cpuCount": 1.0,
  "memoryMB": 1024,
  "jarPath": "http://repo/jobs/data-sync-job-1.0.jar",
  "bootstrapScript": "bin/start.sh",
  "timeZone": "UTC"
}`
	guideRegisterAsWritten = `{"jobName":"data-sync-job","jobClass":"com.example.DataSyncJob","cron":"0 0 2 * * ?","shardingTotalCount":4,"cpuCount":1.0,"memoryMB":1024,"jarPath":"http://repo/jobs/data-sync-job-1.0.jar"}`
)

func TestGuideRegister(t *testing.T) {
	e := newEnv(t)
	// §3.3.2 as written: the app is the jar, its jobClass is what each shard runs.
	r := e.must(http.StatusOK, http.MethodPost, "/api/jobs/register", guideRegisterAsWritten)
	if a, err := e.reg.Config().App(context.Background(), "data-sync-job"); err != nil || a.BootstrapScript != "data-sync-job-1.0.jar" || a.AppURL != "http://repo/jobs/data-sync-job-1.0.jar" {
		t.Fatalf("the app made from jarPath: %+v %v", a, err)
	}
	if j, err := e.reg.Config().Job(context.Background(), "data-sync-job"); err != nil || j.JobClass != "com.example.DataSyncJob" || j.Props["jobClass"] != "" {
		t.Fatalf("the job: %+v %v (%s)", j, err, r.Body)
	}
	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/deregister", "data-sync-job")
	e.must(http.StatusNoContent, http.MethodDelete, "/api/app/data-sync-job", "")
	e.wantError(e.request(http.MethodPost, "/api/jobs/register", `{"jobName":"j","cron":"0 0 2 * * ?","jarPath":"http://repo/j.tar.gz"}`), http.StatusBadRequest,
		"jarPath names the package of the new app 'j'", "bootstrapScript")
	e.wantError(e.request(http.MethodPost, "/api/jobs/register", `{"jobName":"j","cron":"0 0 2 * * ?"}`), http.StatusBadRequest,
		"app 'j' does not exist; send jarPath", "POST /api/app")
	if apps, _ := e.reg.Config().Apps(context.Background()); len(apps) != 0 {
		t.Fatalf("a refused registration left apps behind: %+v", apps)
	}

	r = e.must(http.StatusOK, http.MethodPost, "/api/jobs/register", guideRegisterBody)
	golden(t, "guide_register", r.Body)
	r = e.must(http.StatusOK, http.MethodGet, "/api/app/data-sync-job", "")
	golden(t, "guide_register_app", r.Body)
	e.wantError(e.request(http.MethodPost, "/api/jobs/register", guideRegisterBody), http.StatusConflict, "Job 'data-sync-job' already existed.")

	// A second job on the same app: jarPath may repeat the app's URL, not differ from it.
	e.must(http.StatusOK, http.MethodPost, "/api/jobs/register",
		`{"jobName":"second","appName":"data-sync-job","cron":"0 0 3 * * ?","jarPath":"http://repo/jobs/data-sync-job-1.0.jar"}`)
	e.wantError(e.request(http.MethodPost, "/api/jobs/register",
		`{"jobName":"third","appName":"data-sync-job","jarPath":"http://repo/jobs/other.jar"}`), http.StatusBadRequest,
		"app 'data-sync-job' already exists with appURL", "omit jarPath")
	// A bad job field is named, and no app is created for it.
	e.wantError(e.request(http.MethodPost, "/api/jobs/register",
		`{"jobName":"bad","shardingTotalCount":0,"jarPath":"http://repo/x.jar","bootstrapScript":"bin/start.sh"}`), http.StatusBadRequest, "shardingTotalCount")
	e.wantError(e.request(http.MethodGet, "/api/app/bad", ""), http.StatusNotFound, "Cannot find app 'bad'")
	e.wantError(e.request(http.MethodPost, "/api/jobs/register", `{"jobName":"x","jarURL":"y"}`), http.StatusBadRequest, `unknown field "jarURL"`)
}

func TestGuideControl(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/jobs/register", guideRegisterBody)
	r := e.must(http.StatusOK, http.MethodPost, "/api/jobs/data-sync-job/start", "")
	golden(t, "guide_start", r.Body)
	if e.ops.Wakes() != 1 {
		t.Errorf("start woke the launcher %d times, want 1", e.ops.Wakes())
	}
	r = e.must(http.StatusOK, http.MethodPost, "/api/jobs/data-sync-job/start", `{"jobParameter":"date=2025-04-05","idempotencyKey":"k1"}`)
	r = e.must(http.StatusOK, http.MethodPost, "/api/jobs/data-sync-job/start", `{"idempotencyKey":"k1"}`)
	if got := decode[map[string]any](t, r); got["duplicate"] != true || got["status"] != "success" {
		t.Errorf("repeated key: %s", r.Body)
	}

	// §7.2.2: curl -X POST …/pause answers {"status":"success","message":"Job [userSyncJob] paused."}.
	r = e.must(http.StatusOK, http.MethodPost, "/api/jobs/data-sync-job/pause", "")
	golden(t, "guide_pause", r.Body)
	if d, _ := e.reg.Config().IsDisabled(context.Background(), "job", "data-sync-job"); !d {
		t.Error("pause did not disable the job")
	}
	e.wantError(e.request(http.MethodPost, "/api/jobs/data-sync-job/start", ""), http.StatusConflict, "disabled")
	r = e.must(http.StatusOK, http.MethodPost, "/api/jobs/data-sync-job/resume", "")
	golden(t, "guide_resume", r.Body)
	e.wantError(e.request(http.MethodPost, "/api/jobs/nope/pause", ""), http.StatusNotFound, "Cannot find job 'nope'")
	e.wantError(e.request(http.MethodGet, "/api/jobs/nope/status", ""), http.StatusNotFound, "Cannot find job 'nope'")
}

// start takes the options POST /api/job/trigger takes, with its limits.
func TestGuideStartChecksItsOptions(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/jobs/register", guideRegisterBody)
	long := strings.Repeat("x", 4097)
	e.wantError(e.request(http.MethodPost, "/api/jobs/data-sync-job/start", `{"jobParameter":"`+long+`"}`),
		http.StatusBadRequest, "jobParameter must be at most 4096 bytes")
	e.wantError(e.request(http.MethodPost, "/api/jobs/data-sync-job/start", `{"idempotencyKey":"a b"}`),
		http.StatusBadRequest, "idempotencyKey")
	if q, _ := e.reg.Work().ReadyQueue(context.Background()); len(q) != 0 {
		t.Fatalf("refused starts queued %+v", q)
	}
	e.must(http.StatusOK, http.MethodPost, "/api/jobs/data-sync-job/start", `{"jobParameter":"`+long[:4096]+`"}`)
}

// A job without timeZone fires in the scheduler's time_zone, and its
// status says when in that zone.
func TestGuideStatusNextFireInTheSchedulersZone(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *api.Options, _ *api.Credentials) { o.Schedules.Location = shanghai })
	e.must(http.StatusOK, http.MethodPost, "/api/jobs/register", strings.Replace(guideRegisterBody, `"timeZone": "UTC"`, `"description": ""`, 1))
	st := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/jobs/data-sync-job/status", ""))
	// t0 is 20:00 in Shanghai: the next 02:00 there is 18:00 UTC the same day.
	if st["nextFireTime"] != "2024-03-01T18:00:00Z" {
		t.Errorf("nextFireTime = %v, want 2024-03-01T18:00:00Z", st["nextFireTime"])
	}
}

func TestGuideStatus(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.must(http.StatusOK, http.MethodPost, "/api/jobs/register", guideRegisterBody)
	r := e.must(http.StatusOK, http.MethodGet, "/api/jobs/data-sync-job/status", "")
	golden(t, "guide_status_ready", r.Body)

	// One shard running, one waiting for failover, one more execution queued.
	rt := task.Entry{TaskID: "data-sync-job@-@0@-@READY@-@agent-1@-@u1", AgentID: "agent-1", Hostname: "node03",
		State: "TASK_RUNNING", LaunchedAt: t0, UpdatedAt: t0}
	f := queue.Failover{TaskID: "data-sync-job@-@1@-@READY@-@agent-1@-@u2", Since: t0}
	if err := e.reg.Change().
		Launch("data-sync-job", 0, rt).
		FailOver("data-sync-job", 1, f).
		Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.must(http.StatusOK, http.MethodPost, "/api/jobs/data-sync-job/start", "")
	r = e.must(http.StatusOK, http.MethodGet, "/api/jobs/data-sync-job/status", "")
	golden(t, "guide_status_running", r.Body)

	// Paused by pauseAfterFailures: the state says so, and why.
	p := task.Pause{By: task.PausedBy, At: t0, FailedRuns: 3, Cause: "exit code 3: boom",
		Reason: "paused after 3 failed runs in a row at 2024-03-01T12:00:00Z; last failure: exit code 3: boom"}
	if err := e.reg.Change().Pause("data-sync-job", p).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r = e.must(http.StatusOK, http.MethodGet, "/api/jobs/data-sync-job/status", "")
	golden(t, "guide_status_paused", r.Body)
	r = e.must(http.StatusOK, http.MethodGet, "/api/job/jobs", "")
	golden(t, "job_list_paused", r.Body)
	// Enabling drops the reason with the flag.
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/data-sync-job/enable", "")
	if _, ok, _ := e.reg.Work().PauseOf(ctx, "data-sync-job"); ok {
		t.Error("the pause outlived enable")
	}
}

func TestTriggerRunRecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	e.wantError(e.request(http.MethodGet, "/api/job/trigger/nope", ""), http.StatusNotFound, "no trigger with idempotency key 'nope'")
	e.wantError(e.request(http.MethodGet, "/api/job/trigger/bad%20key", ""), http.StatusBadRequest, "idempotencyKey")

	e.must(http.StatusOK, http.MethodPost, "/api/job/trigger", `{"jobName":"job","idempotencyKey":"ci-1"}`)
	r := e.must(http.StatusOK, http.MethodGet, "/api/job/trigger/ci-1", "")
	golden(t, "run_queued", r.Body)

	// The launcher's commit: dequeue and record the shards with the key.
	q, _ := e.reg.Work().ReadyQueue(ctx)
	ch := e.reg.Change().Dequeue(q[0], t0)
	for item := range 2 {
		ch.Launch("job", item, task.Entry{TaskID: "job@-@" + string(rune('0'+item)) + "@-@READY@-@a1@-@u",
			AgentID: "a1", Hostname: "host-1", State: "TASK_RUNNING", RunKey: "ci-1", LaunchedAt: t0, UpdatedAt: t0})
	}
	if err := ch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r = e.must(http.StatusOK, http.MethodGet, "/api/job/trigger/ci-1", "")
	golden(t, "run_running", r.Body)

	// The status handler's last commit: the shards gone, the record done.
	rec, _ := e.reg.Work().RunRecordOf(ctx, "ci-1")
	rec.Shards = []task.ShardOutcome{{Item: 0, TaskID: "job@-@0@-@READY@-@a1@-@u", State: "TASK_FINISHED"},
		{Item: 1, TaskID: "job@-@1@-@READY@-@a1@-@u", State: "TASK_FAILED", Message: "exit code 3: boom"}}
	rec.Done, rec.EndedAt = true, t0
	if err := e.reg.Change().Unlaunch("job", 0).Unlaunch("job", 1).RecordRun("ci-1", rec).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r = e.must(http.StatusOK, http.MethodGet, "/api/job/trigger/ci-1", "")
	golden(t, "run_failed", r.Body)

	// A queued run dropped by a disable is reported as cancelled.
	e.must(http.StatusOK, http.MethodPost, "/api/job/trigger", `{"jobName":"job","idempotencyKey":"ci-2"}`)
	if err := e.reg.Work().ClearReady(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/trigger/ci-2", "")); got["state"] != "CANCELLED" {
		t.Errorf("dropped run: %v", got)
	}
}

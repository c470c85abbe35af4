package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// GET /api/job/tasks/ready, and the job's status, say what the waiting
// job needs and who holds it until when, as of the answer (issue 42).
func TestReadyNamesTheHolder(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("report", "app"))
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "report")
	w := queue.Wait{Reason: queue.WaitReserved, Message: "the oldest work that does not fit now …", Since: t0,
		Needs: &queue.Res{CPUs: 1, MemMB: 64},
		Holders: []queue.Holder{{Job: "pay_settle", Shards: 1, TaskID: "pay_settle@-@0@-@READY@-@a1@-@1", Holds: queue.Res{CPUs: 1.9, MemMB: 64},
			Since: t0.Add(-5 * time.Second), ExpectedEnd: t0.Add(3 * time.Second), Basis: "p90", TypicalMs: 8000}}}
	if err := e.reg.Change().Wait(queue.WaitKey(false, "report", 0), w).Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := "waits for 1 CPU and 64 MB; job pay_settle holds 1.9 CPUs and 64 MB until it ends (running 5s of its usual 8s)"
	rows := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	if len(rows) != 1 {
		t.Fatalf("ready: %v", rows)
	}
	waiting, _ := rows[0]["waiting"].(map[string]any)
	holders, _ := waiting["holders"].([]any)
	if waiting["summary"] != want || len(holders) != 1 || holders[0].(map[string]any)["expectedEnd"] != "2024-03-01T12:00:03Z" {
		t.Errorf("waiting: %v", waiting)
	}
	st := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/jobs/report/status", ""))
	if sw, _ := st["waiting"].(map[string]any); sw["summary"] != want {
		t.Errorf("status waiting: %v", st["waiting"])
	}
	e.clock.Advance(10 * time.Second)
	rows = decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	if got := rows[0]["waiting"].(map[string]any)["summary"]; got != "waits for 1 CPU and 64 MB; job pay_settle holds 1.9 CPUs and 64 MB until it ends (running 15s, longer than its usual 8s)" {
		t.Errorf("later: %v", got)
	}
}

// GET /api/jobs/{jobName}/durations: the job's finished runs, newest
// first, and the p90 of its successful ones.
func TestJobDurations(t *testing.T) {
	db, st := resultsDB(t)
	e := newEnv(t, withHistory(st))
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("my_job", "app"))
	for i, d := range []int{2, 4, 6, 8, 10} {
		start := t0.Add(time.Duration(i+1) * time.Minute)
		execRow(db, string(rune('a'+i)), "my_job", "my_job@-@0@-@READY@-@a@-@"+string(rune('a'+i)), 0, i != 4,
			start.Format("2006-01-02 15:04:05.000"), start.Add(time.Duration(d)*time.Second).Format("2006-01-02 15:04:05.000"), nil)
	}
	execRow(db, "z", "my_job", "my_job@-@0@-@READY@-@a@-@z", 0, false, t0.Add(9*time.Minute).Format("2006-01-02 15:04:05.000"), "", nil) // running
	got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/jobs/my_job/durations", ""))
	runs, _ := got["runs"].([]any)
	typ, _ := got["typical"].(map[string]any)
	if len(runs) != 5 || runs[0].(map[string]any)["durationMs"] != 10000.0 || runs[0].(map[string]any)["success"] != false {
		t.Errorf("runs: %v", runs)
	}
	if typ["runs"] != 4.0 || typ["p90Ms"] != 8000.0 || typ["medianMs"] != 4000.0 || typ["known"] != true {
		t.Errorf("typical: %v (the 4 successful runs: 2, 4, 6, 8 s)", typ)
	}
	e.wantError(e.request(http.MethodGet, "/api/jobs/my_job/durations?limit=0", ""), http.StatusBadRequest, "limit must be 1 to 500")
	e.wantError(e.request(http.MethodGet, "/api/jobs/nope/durations", ""), http.StatusNotFound)
}

// GET /api/job/trigger/{key} says FAILED as soon as a shard failed for
// good, with its cause, while other shards still run (issue 42: ejctl
// --wait waited out its timeout on a failover job).
func TestRunFailsAsSoonAsAShardFailedForGood(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("fo_job", "app"))
	rec := task.RunRecord{JobName: "fo_job", At: t0, Failed: true, Shards: []task.ShardOutcome{{Item: 0, TaskID: "fo_job@-@0@-@READY@-@a@-@1",
		State: "TASK_FAILED", Message: "fetch http://127.0.0.1:1/app.tgz: connection refused"}}}
	if err := e.reg.Change().RecordRun("k-fo", rec).Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Change().
		Launch("fo_job", 1, task.Entry{TaskID: "fo_job@-@1@-@READY@-@a@-@2", AgentID: "a",
			State: "TASK_RUNNING", RunKey: "k-fo", LaunchedAt: t0}).
		Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	v := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/trigger/k-fo", ""))
	running, _ := v["running"].([]any)
	if v["state"] != "FAILED" || len(running) != 1 || v["message"] != "shard 0 failed (TASK_FAILED: fetch http://127.0.0.1:1/app.tgz: connection refused): the run cannot succeed" {
		t.Errorf("run: %v", v)
	}
}

// GET /api/job/trigger/{key} of a queued run says why it waits, so that
// ejctl --wait can stop at once on never_fits (issue 57 item 2: it waited
// out its 30 minutes at QUEUED).
func TestQueuedRunSaysWhyItWaits(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("huge", "app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/trigger", `{"jobName":"huge","idempotencyKey":"k-huge"}`)
	v := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/trigger/k-huge", ""))
	if v["state"] != "QUEUED" || v["waiting"] != nil {
		t.Fatalf("before a round: %v", v)
	}
	w := queue.Wait{Reason: queue.WaitTooLarge, Message: "needs 64 CPUs, more than any agent has (8)", Since: t0}
	if err := e.reg.Change().Wait(queue.WaitKey(false, "huge", 0), w).Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	v = decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/trigger/k-huge", ""))
	waiting, _ := v["waiting"].(map[string]any)
	if v["state"] != "QUEUED" || waiting["reason"] != "never_fits" || waiting["message"] != w.Message {
		t.Errorf("queued run: %v", v)
	}
}

// Work that can never fit gets no estimated start (it would read "now",
// moving on every refresh): it starts only once the cluster grows.
func TestNeverFittingWorkHasNoEstimate(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("huge", "app"))
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "huge")
	w := queue.Wait{Reason: queue.WaitTooLarge, Message: "needs 64 CPUs, more than any agent has (8)", Since: t0}
	if err := e.reg.Change().Wait(queue.WaitKey(false, "huge", 0), w).Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	if len(rows) != 1 || rows[0]["position"] == nil || rows[0]["estimatedStart"] != nil {
		t.Fatalf("rows %v: want a position and no estimated start", rows)
	}
}

// PUT /api/namespaces/default answers 200 the first time too: default
// always exists (docs/api.md), its first record changes it; a new
// namespace is 201.
func TestPutDefaultNamespaceIsAChange(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPut, "/api/namespaces/default", `{"weight":2}`)
	e.must(http.StatusCreated, http.MethodPut, "/api/namespaces/pay", "")
}

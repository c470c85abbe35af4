package api_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/migrations"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
	"github.com/jmoiron/sqlx"
)

// resultsDB is a real history database (SQLite) with rows inserted as the
// trace writer would leave them.
func resultsDB(t *testing.T) (*sqlx.DB, *history.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.db")
	migratedDB(t, path)
	db, err := sqlx.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrations.Apply(context.Background(), db.DB, migrations.SQLite); err != nil {
		t.Fatal(err)
	}
	st, err := history.New(db, history.SQLite, history.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	return db, st
}

// execRow inserts an execution: ended = "" leaves it running.
func execRow(db *sqlx.DB, id, job, task string, item int, ok bool, start, ended string, cause any) {
	var end any
	if ended != "" {
		end = ended
	}
	db.MustExec(`INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, failure_cause, start_time, complete_time)
		VALUES (?, ?, ?, 'host-1', '10.0.0.1', ?, 'NORMAL_TRIGGER', ?, ?, ?, ?)`, id, job, task, item, ok, cause, start, end)
}

func traceRow(db *sqlx.DB, id, job, task, state, msg, at string) {
	db.MustExec(`INSERT INTO JOB_STATUS_TRACE_LOG (id, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, state, message, creation_time)
		VALUES (?, ?, '', ?, 'agent-1', 'CLOUD_EXECUTOR', 'READY', '0', ?, ?, ?)`, id, job, task, state, msg, at)
}

const (
	failedTask  = "my_job@-@1@-@READY@-@agent-1@-@0192"
	runningTask = "my_job@-@0@-@READY@-@agent-1@-@0193"
)

// GET /api/job/tasks/{taskId}: a failed task's state, exit code and
// failure cause (what the console's log page shows), a running task from
// the registry, and 404s.
func TestTaskResult(t *testing.T) {
	db, st := resultsDB(t)
	execRow(db, "1", "my_job", failedTask, 1, false, "2024-03-01 11:00:00.000", "2024-03-01 11:00:02.000", "exit code 3: disk full")
	traceRow(db, "t1", "my_job", failedTask, "TASK_RUNNING", "", "2024-03-01 11:00:00.100")
	traceRow(db, "t2", "my_job", failedTask, "TASK_FAILED", "exit code 3: disk full", "2024-03-01 11:00:02.000")
	traceRow(db, "t3", "sig_job", "sig_job@-@0@-@READY@-@agent-1@-@01", "TASK_FAILED", "terminated by signal SIGKILL: ", "2024-03-01 11:00:02.000")
	okTask := "my_job@-@2@-@READY@-@agent-1@-@0194"
	execRow(db, "2", "my_job", okTask, 2, true, "2024-03-01 11:00:00.000", "2024-03-01 11:00:01.000", nil)
	traceRow(db, "t4", "my_job", okTask, "TASK_FINISHED", "", "2024-03-01 11:00:01.000")
	e := newEnv(t, withHistory(st))

	// A success exited 0 (it said exitCode null, issue 57 item 13).
	done := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/"+okTask, ""))
	if done["success"] != true || done["exitCode"] != 0.0 {
		t.Errorf("a task that succeeded: %v", done)
	}
	got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/"+failedTask, ""))
	want := map[string]any{"taskId": failedTask, "jobName": "my_job", "shardingItem": 1.0, "state": "TASK_FAILED", "running": false,
		"success": false, "exitCode": 3.0, "failureCause": "exit code 3: disk full", "message": "exit code 3: disk full", "hostname": "host-1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	sig := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/sig_job@-@0@-@READY@-@agent-1@-@01", ""))
	if sig["signal"] != "SIGKILL" || sig["exitCode"] != nil || sig["success"] != nil {
		t.Errorf("a task ended by a signal (traces only): %v", sig)
	}

	if err := e.reg.Change().
		Launch("my_job", 0, task.Entry{TaskID: runningTask, AgentID: "agent-1",
			Hostname: "host-2", State: "TASK_RUNNING", LaunchedAt: t0}).
		Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	run := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/"+runningTask, ""))
	if run["running"] != true || run["state"] != "TASK_RUNNING" || run["hostname"] != "host-2" || run["success"] != nil {
		t.Errorf("running task: %v", run)
	}
	e.wantError(e.request(http.MethodGet, "/api/job/tasks/my_job@-@2@-@READY@-@agent-1@-@none", ""), http.StatusNotFound, "not running and history has no record of it")
	e.wantError(e.request(http.MethodGet, "/api/job/tasks/not-a-task", ""), http.StatusNotFound, "a task id looks like")
	// The fixed views still answer their own routes.
	e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/running", "")
}

// GET /api/job/lastResults: each shard's newest execution summed up per
// job; jobs without history and unknown ones are left out.
func TestLastResults(t *testing.T) {
	db, st := resultsDB(t)
	e := newEnv(t, withHistory(st))
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	for _, j := range []string{"my_job", "ok_job", "idle_job"} {
		e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody(j, "app"))
		// registered before the runs below
		if err := e.kv.Commit(t.Context(), store.Put(registry.RegisteredJobPath+"/"+j, []byte("2024-03-01T08:00:00Z"))); err != nil {
			t.Fatal(err)
		}
	}
	// my_job: an older run failed on shard 1, the newest run of shard 1
	// failed again while shard 0 succeeded.
	execRow(db, "1", "my_job", "my_job@-@0@-@READY@-@a@-@1", 0, true, "2024-03-01 10:00:00.000", "2024-03-01 10:00:01.000", nil)
	execRow(db, "2", "my_job", "my_job@-@1@-@READY@-@a@-@2", 1, true, "2024-03-01 10:00:00.000", "2024-03-01 10:00:01.000", nil)
	execRow(db, "3", "my_job", "my_job@-@0@-@READY@-@a@-@3", 0, true, "2024-03-01 11:00:00.000", "2024-03-01 11:00:01.000", nil)
	execRow(db, "4", "my_job", failedTask, 1, false, "2024-03-01 11:00:00.000", "2024-03-01 11:00:05.000", "exit code 3: disk full")
	// ok_job: an old failure, then both shards fine; a row of shard 7
	// (from when the job had more shards) is ignored.
	execRow(db, "5", "ok_job", "ok_job@-@0@-@READY@-@a@-@5", 0, false, "2024-03-01 09:00:00.000", "2024-03-01 09:00:01.000", "exit code 1")
	execRow(db, "6", "ok_job", "ok_job@-@0@-@READY@-@a@-@6", 0, true, "2024-03-01 10:00:00.000", "2024-03-01 10:00:01.000", nil)
	execRow(db, "7", "ok_job", "ok_job@-@1@-@READY@-@a@-@7", 1, false, "2024-03-01 10:00:00.000", "", nil)
	execRow(db, "8", "ok_job", "ok_job@-@7@-@READY@-@a@-@8", 7, false, "2024-03-01 10:30:00.000", "2024-03-01 10:30:01.000", "exit code 9")

	rows := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/lastResults?jobName=my_job,idle_job&jobName=ok_job&jobName=nope", ""))
	if len(rows) != 2 {
		t.Fatalf("rows = %v, want my_job and ok_job", rows)
	}
	mine, ok := rows[0], rows[1]
	if mine["jobName"] != "my_job" || mine["state"] != "FAILED" || mine["shards"] != 2.0 || mine["failedShards"] != 1.0 ||
		mine["failureCause"] != "exit code 3: disk full" || mine["taskId"] != failedTask {
		t.Errorf("my_job = %v", mine)
	}
	if ok["jobName"] != "ok_job" || ok["state"] != "RUNNING" || ok["runningShards"] != 1.0 || ok["failedShards"] != 0.0 || ok["shards"] != 2.0 {
		t.Errorf("ok_job = %v", ok)
	}
	e.wantError(e.request(http.MethodGet, "/api/job/lastResults", ""), http.StatusBadRequest, "name 1 to 100 jobs")

	// Without a history database: nothing to say.
	off := newEnv(t)
	if got := off.must(http.StatusOK, http.MethodGet, "/api/job/lastResults?jobName=my_job", "").String(); got != "[]" {
		t.Errorf("without history: %s", got)
	}
}

// A job deleted and registered again inherits nothing of the old one: its
// status has no lastTriggerTime from the old job's runs, GET
// /api/job/lastResults no result, and registeredAt says where its own
// history starts.
func TestReRegisteredJobInheritsNothing(t *testing.T) {
	db, st := resultsDB(t)
	e := newEnv(t, withHistory(st))
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("my_job", "app"))
	execRow(db, "1", "my_job", "my_job@-@0@-@READY@-@a@-@1", 0, false, "2024-03-01 12:00:30.000", "2024-03-01 12:00:31.000", "exit code 1")
	e.clock.Advance(5 * time.Minute)
	old := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/jobs/my_job/status", ""))
	if old["lastTriggerTime"] != "2024-03-01T12:00:30Z" {
		t.Fatalf("the first job's status: %v", old)
	}
	if got := e.must(http.StatusOK, http.MethodGet, "/api/job/lastResults?jobName=my_job", "").String(); got == "[]" {
		t.Fatal("the first job has no last result")
	}
	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/my_job/deregister", "")
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("my_job", "app"))
	st2 := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/jobs/my_job/status", ""))
	if st2["lastTriggerTime"] != nil || st2["registeredAt"] != "2024-03-01T12:05:00Z" {
		t.Errorf("the new job's status: lastTriggerTime %v (the old job's), registeredAt %v", st2["lastTriggerTime"], st2["registeredAt"])
	}
	if got := e.must(http.StatusOK, http.MethodGet, "/api/job/lastResults?jobName=my_job", "").String(); got != "[]" {
		t.Errorf("the new job's last result is the old job's: %s", got)
	}
	// Its own runs count.
	execRow(db, "2", "my_job", "my_job@-@0@-@READY@-@a@-@2", 0, true, "2024-03-01 12:05:30.000", "2024-03-01 12:05:31.000", nil)
	st3 := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/jobs/my_job/status", ""))
	if st3["lastTriggerTime"] != "2024-03-01T12:05:30Z" {
		t.Errorf("the new job's own run: lastTriggerTime %v", st3["lastTriggerTime"])
	}
}

// The log of a task whose app could not be fetched: not "the sandbox may
// have been removed", but the fetch error that ended it (issue 42).
func TestLogOfATaskThatNeverRanSaysWhy(t *testing.T) {
	db, st := resultsDB(t)
	e := newEnv(t, withHistory(st))
	const fetchFailed = "fetch_job@-@0@-@READY@-@agent-1@-@01"
	cause := "fetch http://127.0.0.1:1/app.tgz: dial tcp 127.0.0.1:1: connect: connection refused"
	execRow(db, "1", "fetch_job", fetchFailed, 0, false, "2024-03-01 11:00:00.000", "2024-03-01 11:00:00.500", cause)
	traceRow(db, "t1", "fetch_job", fetchFailed, "TASK_FAILED", cause, "2024-03-01 11:00:00.500")
	e.ops.logErr = fmt.Errorf("%w: no stdout for task %s on agent agent-1 (the sandbox may have been removed)", api.ErrNotFound, fetchFailed)
	r := e.request(http.MethodGet, "/api/job/logs/"+fetchFailed+"?stream=stdout&format=json", "")
	e.wantError(r, http.StatusNotFound, "has no stdout: it ended TASK_FAILED before writing any: "+cause)
	// A task neither running nor in history is unknown: said so, not the
	// engine's words about its agent (issue 57 item 13: "agents: not
	// found: agent x is not registered with the master").
	e.ops.logErr = fmt.Errorf("%w: agents: not found: agent x is not registered with the master", api.ErrNotFound)
	r = e.request(http.MethodGet, "/api/job/logs/other@-@0@-@READY@-@x@-@02?format=json", "")
	e.wantError(r, http.StatusNotFound, "task other@-@0@-@READY@-@x@-@02 is unknown: it is not running and history has no record of it")
	if strings.Contains(r.message(t), "registered with the master") {
		t.Errorf("the unknown task's 404 still speaks of its agent: %s", r.message(t))
	}
}

package executor

import (
	"encoding/json"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/executor/fakeagent"
)

// decodeReport checks the exact JSON keys the scheduler's trace observer
// reads and returns the decoded report.
func decodeReport(t *testing.T, data []byte) Report {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatalf("status data %q: %v", data, err)
	}
	for k := range keys {
		switch k {
		case "hostname", "ip", "launchTime", "forkTime", "startTime", "completeTime", "exitCode":
		default:
			t.Fatalf("unexpected key %q in %s", k, data)
		}
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Hostname == "" || r.IP == "" {
		t.Fatalf("report lacks host or ip: %s", data)
	}
	return r
}

func TestStatusDataReportsHostTimesAndExitCode(t *testing.T) {
	h := start(t, true, Options{IdleTimeout: -1})
	url := scriptURL(t, "run.sh", "#!/bin/sh\ncase $ELASTICJOB_SHARDING_ITEM in\n0) exit 0;;\n*) echo boom >&2; exit 3;;\nesac\n")
	h.agent.Send(fakeagent.Launch("ok", taskData(url, "run.sh", 0, nil)))
	h.agent.Send(fakeagent.Launch("bad", taskData(url, "run.sh", 1, nil)))
	byState := map[string]*mesos.TaskStatus{}
	for _, u := range h.updates(t, 6) {
		byState[u.Status.TaskID.Value+":"+u.Status.State.String()] = &u.Status
	}
	if d := byState["ok:TASK_STARTING"].Data; d != nil {
		t.Fatalf("STARTING carries data %s", d)
	}
	run := decodeReport(t, byState["ok:TASK_RUNNING"].Data)
	if run.StartTime == nil || run.CompleteTime != nil || run.ExitCode != nil {
		t.Fatalf("RUNNING report %+v", run)
	}
	// The launch-path stages: LAUNCH received ≤ fork begun ≤ process started.
	if run.LaunchTime == nil || run.ForkTime == nil || run.ForkTime.Before(*run.LaunchTime) || run.StartTime.Before(*run.ForkTime) {
		t.Fatalf("RUNNING report's launch, fork and start times out of order or missing: %s", byState["ok:TASK_RUNNING"].Data)
	}
	fin := decodeReport(t, byState["ok:TASK_FINISHED"].Data)
	if fin.LaunchTime != nil || fin.ForkTime != nil {
		t.Fatalf("FINISHED report repeats the launch-path times: %+v", fin)
	}
	if fin.StartTime == nil || !fin.StartTime.Equal(*run.StartTime) || fin.CompleteTime == nil ||
		fin.CompleteTime.Before(*fin.StartTime) || fin.ExitCode == nil || *fin.ExitCode != 0 {
		t.Fatalf("FINISHED report %+v (running %+v)", fin, run)
	}
	failed := byState["bad:TASK_FAILED"]
	rep := decodeReport(t, failed.Data)
	if rep.ExitCode == nil || *rep.ExitCode != 3 || failed.GetMessage() != "exit code 3: boom" || rep.StartTime == nil {
		t.Fatalf("FAILED report %+v message %q", rep, failed.GetMessage())
	}
	h.agent.Send(fakeagent.Shutdown())
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}

func TestFailureBeforeStartReportsNoExitCode(t *testing.T) {
	h := start(t, true, Options{})
	h.agent.Send(fakeagent.Launch("t1", taskData("file:///nonexistent/app.tar.gz", "run.sh", 0, nil)))
	us := h.updates(t, 2)
	if got := states(us); got != "t1:TASK_STARTING t1:TASK_FAILED" {
		t.Fatalf("updates %s", got)
	}
	rep := decodeReport(t, us[1].Status.Data)
	if rep.ExitCode != nil || rep.StartTime != nil || rep.CompleteTime == nil {
		t.Fatalf("report %+v", rep)
	}
	h.agent.Send(fakeagent.Shutdown())
	if err := h.exit(t); err != nil {
		t.Fatal(err)
	}
}

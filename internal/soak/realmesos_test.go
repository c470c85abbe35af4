package soak

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

// runRecordScript runs the real-Mesos shape's job script as the executor does
// (its environment), with the run log at log.
func runRecordScript(t *testing.T, log string, env ...string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(script, recordScript(log), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", script)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh: %v: %s", err, out)
	}
}

func TestRecordScriptWritesTheRunLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "it's here", "runs.jsonl") // a quote in the path
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	runRecordScript(t, log, "ELASTICJOB_EXECUTION_TYPE=TRANSIENT", "ELASTICJOB_TASK_ID=sk001@-@1@-@READY@-@@-@0190", "ELASTICJOB_JOB_NAME=sk001",
		"ELASTICJOB_SHARDING_ITEM=1", "ELASTICJOB_EXECUTION_SOURCE=NORMAL_TRIGGER", "ELASTICJOB_JOB_PARAMETER=soak 0 k7-sk001",
		"ELASTICJOB_LEADER_TERM=4", "ELASTICJOB_QUEUED_AT=2026-11-27T08:00:05Z")
	runRecordScript(t, log, "ELASTICJOB_EXECUTION_TYPE=TRANSIENT", "ELASTICJOB_TASK_ID=sk002@-@0@-@READY@-@@-@0191", "ELASTICJOB_JOB_NAME=sk002",
		"ELASTICJOB_SHARDING_ITEM=0", "ELASTICJOB_EXECUTION_SOURCE=MISFIRE", "ELASTICJOB_JOB_PARAMETER=soak 0")
	lines, err := runlog.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a start and an end per run: %+v", len(lines), lines)
	}
	s, e := lines[0], lines[1]
	if s.Ev != runlog.Start || s.Task != "sk001@-@1@-@READY@-@@-@0190" || s.Job != "sk001" || s.Item != 1 || s.Source != "NORMAL_TRIGGER" ||
		s.Term == nil || *s.Term != 4 || !s.Queued.Equal(time.Date(2026, 11, 27, 8, 0, 5, 0, time.UTC)) || s.Param != "soak 0 k7-sk001" {
		t.Errorf("start: %+v", s)
	}
	if e.Ev != runlog.End || e.Task != s.Task || e.State != "TASK_FINISHED" {
		t.Errorf("end: %+v", e)
	}
	if d := e.At.Sub(s.At); d < 150*time.Millisecond || s.At.Before(before) {
		t.Errorf("start %s, end %s: want the run to last 0.2-1 s after the test began", s.At, e.At)
	}
	if s2 := lines[2]; s2.Term != nil || !s2.Queued.IsZero() || s2.Source != "MISFIRE" {
		t.Errorf("a run without term and queued instant: %+v", s2)
	}
}

// A DAEMON task runs the script at each of its cron's instants under one
// task id: only the first is a start, and none ends.
func TestRecordScriptRecordsADaemonTaskOnce(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs.jsonl")
	env := []string{"ELASTICJOB_EXECUTION_TYPE=DAEMON", "ELASTICJOB_TASK_ID=sk009@-@0@-@READY@-@@-@0192", "ELASTICJOB_JOB_NAME=sk009",
		"ELASTICJOB_SHARDING_ITEM=0", "ELASTICJOB_EXECUTION_SOURCE=NORMAL_TRIGGER", "ELASTICJOB_JOB_PARAMETER=soak 0"}
	runRecordScript(t, log, env...)
	runRecordScript(t, log, env...)
	lines, err := runlog.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].Ev != runlog.Start || lines[0].Job != "sk009" {
		t.Fatalf("lines %+v, want one start", lines)
	}
}

func TestOnlyFaultsDrawsTheNamedKinds(t *testing.T) {
	s := &RealMesos{Etcd: Etcd{ZK: ZK{}}}
	var names []string
	for _, k := range s.Faults() {
		names = append(names, k.Name)
	}
	for _, want := range []string{"kill-leader", "leader-cut-from-master", "leader-master-loss", AgentKilled, AgentLost, MasterKilled, "standby-paused"} {
		if !slices.Contains(names, want) {
			t.Errorf("faults %v: no %s", names, want)
		}
	}
	if slices.Contains(names, "agents-killed") || slices.Contains(names, "leader-cut-from-agents") {
		t.Errorf("faults %v: mesos-local's kept", names)
	}
	o, err := onlyFaults(s, []string{MasterKilled, AgentLost})
	if err != nil {
		t.Fatal(err)
	}
	if ks := o.Faults(); len(ks) != 2 || ks[0].Name != AgentLost || ks[1].Name != MasterKilled {
		t.Errorf("only: %+v", ks)
	}
	if _, err := onlyFaults(s, []string{"agents-killed"}); err == nil || !strings.Contains(err.Error(), `has no fault "agents-killed" (it has: kill-leader`) {
		t.Errorf("an unknown kind: %v", err)
	}
}

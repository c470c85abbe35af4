//go:build e2e

package realmesos

import (
	"strings"
	"testing"
)

// TestOtherInstanceJoinsRunningExecutor: an executor started by one scheduler instance keeps
// receiving tasks from the next one, although that one serves the executor binary from another
// URL. Mesos refuses a task whose ExecutorInfo differs from its running executor's (TASK_ERROR,
// the run lost); the new instance reads the running executor's ExecutorInfo from the master and
// sends that. The two instances share a ZooKeeper registry (so the framework) and nothing else,
// as a leader and the standby that takes over from it do.
func TestOtherInstanceJoinsRunningExecutor(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	keep := schedOpts{mesosURL: m.masterURL(), extra: append(sharedRegistry(t), "--executor-idle-timeout", "10m")}
	a := startScheduler(t, "a", t.TempDir()+"/data", keep)
	eventually(t, waitLong, a.subscribed, "scheduler a to subscribe")
	a.publishApp("recorder", recorderURL(), "bin/record.sh")
	out := outDir(t)
	a.registerJob("join_job", "recorder", "", out, 1)
	a.trigger("join_job")
	eventually(t, waitLong, func() bool { return len(runsIn(t, out)) == 1 }, "the first run (by scheduler a)")
	a.kill9()

	b := startScheduler(t, "b", t.TempDir()+"/data", keep)
	eventually(t, waitLong, b.subscribed, "scheduler b to subscribe")
	if a.base == b.base {
		t.Fatal("both instances serve the executor from the same URL; the test needs different ones")
	}
	b.trigger("join_job")
	eventually(t, waitLong, func() bool { return len(runsIn(t, out)) == 2 || strings.Contains(b.Log(), "TASK_ERROR") },
		"the second run (by scheduler b)")
	if line := grepLine(b.Log(), "TASK_ERROR"); line != "" {
		t.Fatalf("scheduler b's task was refused: %s", line)
	}
	if !strings.Contains(b.Log(), "task joins a running executor started with another ExecutorInfo") {
		t.Fatal("scheduler b did not reuse the running executor's ExecutorInfo")
	}
	if n := len(m.sandboxFiles("elasticjob-executor")); n != 1 {
		t.Fatalf("%d executor sandboxes, want the one executor a started", n)
	}
	noTaskRanTwice(t, runsIn(t, out))
}

//go:build e2e

package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// The cgroup file system is every user's to read: search's task looks
// there for pay's groups (the namespace's, its containers', its tasks',
// whose names carry pay's job names and task ids) and finds none of
// their names.
func TestHostileCgroupNamesNameNoOtherTeam(t *testing.T) {
	w := newWorld(t, 12)
	probe := `#!/bin/sh
for d in /sys/fs/cgroup/*/; do find "$d" -maxdepth 12 -name '*pay*' 2>/dev/null; done | head -200
echo end-of-cgroups
`
	w.attack("cgnames", "bin/probe.sh", 1, map[string]string{"bin/probe.sh": probe})
	var outs []string
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		outs = w.stdouts("cgnames", "end-of-cgroups")
		return len(outs) == 1
	}, "search's probe to finish")
	agents, _ := filepath.Glob(filepath.Join(w.data, "mesos", "slaves", "*"))
	if len(agents) != 1 {
		t.Fatalf("agents in the data directory: %v", agents)
	}
	// Other schedulers of this host (parallel tests) have groups of their
	// own pay: only this world's are looked for.
	agent := filepath.Base(agents[0])
	for _, l := range strings.Split(outs[0], "\n") {
		if strings.Contains(l, w.payTaskID) || strings.Contains(l, agent+"/ns-pay") {
			t.Errorf("CROSSED: search's task lists pay's group %s", l)
		}
	}
	if !alive(w.payPid) {
		t.Errorf("pay's task %d did not survive", w.payPid)
	}
	if _, err := os.Stat(w.paySandbox); err != nil {
		t.Errorf("pay's sandbox: %v", err)
	}
}

// execProbe is what search's task tries against its own executor (the same
// user: its agent token would let it report as that executor) and the
// groups above its own: one ROW line each, every one must say DENIED.
const execProbe = `#!/bin/sh
row() { if [ "$2" = 0 ]; then echo "ROW $1 ALLOWED $3"; else echo "ROW $1 DENIED $3"; fi; }
try() { name=$1; shift; out=$("$@" 2>&1); rc=$?; [ $rc = 0 ] || out=; row "$name" $rc "$(echo "$out" | head -c 200 | tr '\n' ' ')"; }
E=
for p in $(ls /proc | grep -E '^[0-9]+$'); do [ "$(cat /proc/$p/comm 2>/dev/null)" = executor ] && E=$p; done
[ -n "$E" ]; row executor-not-found $((1-$?)) "pid $E"
try executor-environ grep -a MESOS_EXECUTOR_AUTHENTICATION_TOKEN /proc/$E/environ
try executor-mem dd if=/proc/$E/mem bs=4096 count=1 skip=1024
try executor-fds ls /proc/$E/fd
try executor-ptrace perl -e "syscall(101, 16, $E, 0, 0) == 0 or exit 1"
env | grep -q MESOS_EXECUTOR_AUTHENTICATION_TOKEN; row token-in-task-env $? ""
rel=$(awk -F: '$2 == "memory" {print $3}' /proc/self/cgroup | head -1)
d=/sys/fs/cgroup/memory$rel
try container-procs sh -c "echo $$ > '$d/../cgroup.procs'"
try namespace-procs sh -c "echo $$ > '$d/../../cgroup.procs'"
try namespace-event-control sh -c "echo '3 4 1' > '$d/../../cgroup.event_control'"
try agent-list ls "$d/../../.."
echo end-of-exec-probe
`

// search's task tries to read its executor's agent token (environment,
// memory, descriptors, ptrace: the executor is non-dumpable) and to
// write the cgroup files above its task's group.
func TestHostileTaskReachesNotItsExecutorNorGroupsAbove(t *testing.T) {
	w := newWorld(t, 13)
	w.attack("execprobe", "bin/probe.sh", 1, map[string]string{"bin/probe.sh": execProbe})
	var outs []string
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		outs = w.stdouts("execprobe", "end-of-exec-probe")
		return len(outs) == 1
	}, "search's probe to finish")
	rows := 0
	for _, l := range strings.Split(outs[0], "\n") {
		if !strings.HasPrefix(l, "ROW ") {
			continue
		}
		rows++
		if strings.Contains(l, " ALLOWED") {
			t.Errorf("CROSSED: %s", l)
		}
	}
	if rows != 10 {
		t.Errorf("%d rows ran, want 10:\n%s", rows, outs[0])
	}
}

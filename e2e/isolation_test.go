//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/cgroups/cgroupstest"
)

// A shard allocating past its memoryMB is killed by the kernel and fails
// with a message that says so, recorded in the history, while its sibling
// shard (same executor) keeps running.
func TestShardPastItsMemoryLimit(t *testing.T) {
	t.Parallel()
	cgroupstest.Require(t) // the scheduler isolates only as root with writable cgroups
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	s.publishApp("mem_app", fileURL(recorderTGZ), "bin/record.sh", true)
	line := `if [ "$ELASTICJOB_SHARDING_ITEM" = 1 ]; then dd if=/dev/zero of=/dev/null bs=256M count=1; ` +
		`else touch ` + filepath.Join(out, "calm") + `; sleep 120; fi`
	s.must(http.MethodPost, "/api/job/register", map[string]any{
		"jobName": "mem_job", "appName": "mem_app", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 2,
		"cpuCount": 0.1, "memoryMB": 64, "jobType": "SCRIPT", "props": map[string]string{"script.command.line": line},
	})
	s.triggerTaken("mem_job", func() bool { return len(s.failedTasks("mem_job")) > 0 })
	var failed execution
	eventually(t, waitLong, func() bool {
		for _, e := range s.executions("mem_job") {
			if !e.Success && e.FailureCause != nil {
				failed = e
				return true
			}
		}
		return false
	}, "the failed shard in the execution history")
	if !strings.HasPrefix(*failed.FailureCause, "memory limit of 64 MB exceeded") || !strings.Contains(failed.TaskID, "@-@1@-@") {
		t.Fatalf("execution %s failed with %q", failed.TaskID, *failed.FailureCause)
	}
	eventually(t, waitLong, func() bool { _, err := os.Stat(filepath.Join(out, "calm")); return err == nil }, "shard 0 to start")
	running := s.running("mem_job")
	if len(running) != 1 || running[0].ShardingItem != 0 {
		t.Fatalf("running after the failure: %+v, want shard 0", running)
	}
	s.must(http.MethodPost, "/api/job/mem_job/disable", nil) // kills shard 0
}

// After a restart (kill -9) the task logs of runs from before it can still
// be read: the embedded agent keeps its id and lists the old sandboxes.
func TestTaskLogsSurviveRestart(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	s1 := startScheduler(t, schedOpts{dataDir: dataDir})
	out := outDir(t)
	s1.publishApp("logs_app", fileURL(recorderTGZ), "bin/record.sh", true)
	s1.registerJob(recorderJob("logs_job", "logs_app", out, 1))
	runs := s1.runAndWait("logs_job", out, 1)
	before := s1.taskStdout(runs[0].TaskID)
	if before == "" {
		t.Fatalf("no stdout for %s before the restart", runs[0].TaskID)
	}
	s1.kill9()
	s2 := startScheduler(t, schedOpts{dataDir: dataDir})
	if after := s2.taskStdout(runs[0].TaskID); after != before {
		t.Fatalf("stdout of %s after the restart = %q, before = %q", runs[0].TaskID, after, before)
	}
}

package taskcost

import (
	"strings"
	"testing"
	"time"
)

// A sample is its leaf-most claimed frame's stage: a syscall is charged to
// the cgroups code that made it, a sqlite statement to history when history
// ran it, an allocation in JSON to encoding under the embedded master's
// handler; a stack of the runtime alone is the runtime's.
func TestSplitTracesByStage(t *testing.T) {
	const traces = `File: scheduler
Type: cpu
-----------+-------------------------------------------------------
      30ms   internal/runtime/syscall/linux.Syscall6 internal/runtime/syscall/linux/asm_linux_amd64.s:36
             syscall.Rmdir syscall/syscall_linux.go:1
             github.com/ejcloud/elasticjob/cgroups.(*Group).RemoveEmpty github.com/ejcloud/elasticjob/cgroups/kill.go:110
             github.com/ejcloud/elasticjob/engine/mesos/embedded.(*isolation).removeTaskGroup github.com/ejcloud/elasticjob/engine/mesos/embedded/taskgroups.go:70
             github.com/ejcloud/elasticjob/engine/mesos/embedded.(*master).statusUpdate github.com/ejcloud/elasticjob/engine/mesos/embedded/updates.go:100
             net/http.(*conn).serve net/http/server.go:2067
-----------+-------------------------------------------------------
     bytes:  64
      1.5s   modernc.org/sqlite/lib._sqlite3VdbeExec modernc.org/sqlite/lib/sqlite_linux_amd64.go:1
             database/sql.(*Tx).Commit database/sql/sql.go:1
             github.com/ejcloud/elasticjob/history/trace.(*sqlWriter).writeTx github.com/ejcloud/elasticjob/history/trace/sql.go:1
-----------+-------------------------------------------------------
      10ms   runtime.mallocgc runtime/malloc.go:1
             encoding/json.Marshal encoding/json/encode.go:1
             github.com/ejcloud/elasticjob/engine/mesos/embedded.(*schedulerAPI).handleScheduler github.com/ejcloud/elasticjob/engine/mesos/embedded/sched_api.go:26
-----------+-------------------------------------------------------
      20ms   runtime.gcDrain runtime/mgcmark.go:1
             runtime.gcBgMarkWorker runtime/mgc.go:1
-----------+-------------------------------------------------------
`
	by, total, err := splitTraces(strings.NewReader(traces))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"isolation (cgroups)": 30 * time.Millisecond,
		"history":             1500 * time.Millisecond,
		"HTTP / encoding":     10 * time.Millisecond,
		runtimeStage:          20 * time.Millisecond,
	}
	if total != 1560*time.Millisecond || len(by) != len(want) {
		t.Fatalf("total %v, stages %v", total, by)
	}
	for k, v := range want {
		if by[k] != v {
			t.Errorf("%s: %v, want %v (all: %v)", k, by[k], v, by)
		}
	}
	if _, _, err := splitTraces(strings.NewReader("-----------+---\n  x   f\n")); err == nil {
		t.Error("a sample line without a time: no error")
	}
}

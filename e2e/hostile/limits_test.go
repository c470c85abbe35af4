//go:build e2e

package hostile

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// search's tasks fork as many processes as they can and fill their
// sandbox's disk: the forks stop at what a task may hold, the sandbox's
// executor is killed at its disk limit with the reason recorded, and pay's
// task and the registry's commits go on.
func TestForksAndDiskAreBounded(t *testing.T) {
	const pidsMax, diskMB = 64, 32
	w := newWorld(t, 3, "--isolation-pids-max", strconv.Itoa(pidsMax), "--sandbox-disk-mb", strconv.Itoa(diskMB))
	// At its limit no process of the task can fork, so the loop counts
	// its own forks with builtins alone (a file written by redirection),
	// and a shell that cannot fork stops or dies there.
	forks := `#!/bin/sh
F="$MESOS_SANDBOX/forks.count"
echo 0 > "$F"
sh -c 'i=0; last=; while [ $i -lt 400 ]; do sleep 30 & [ "$!" = "$last" ] && break; last=$!; i=$((i+1)); echo $i > "$1"; done' sh "$F" >/dev/null 2>&1 &
wait
read n < "$F"
echo "started $n of 400"
echo end-of-forks
`
	w.attack("forks", "bin/forks.sh", 1, map[string]string{"bin/forks.sh": forks})
	var out []string
	if !harness.Poll(waitLong, pollEvery, func() bool { out = w.stdouts("forks", "end-of-forks"); return len(out) == 1 }) {
		_, hist := w.search.Do(http.MethodGet, "/api/job/events/executions?namespace=search&jobName=forks", nil)
		t.Fatalf("search's fork loop did not end: its stdout %q, stderr %q, history %s",
			w.stdouts("forks", ""), w.taskFiles("forks", "stderr"), hist)
	}
	m := regexp.MustCompile(`started (\d+) of 400`).FindStringSubmatch(out[0])
	if m == nil {
		t.Fatalf("the fork loop said: %s", out[0])
	}
	if n, _ := strconv.Atoi(m[1]); n >= pidsMax {
		t.Errorf("CROSSED: a task held %d processes, its limit is %d", n, pidsMax)
	}

	fill := "#!/bin/sh\ndd if=/dev/zero of=\"$MESOS_SANDBOX/fill\" bs=1M count=" + strconv.Itoa(4*diskMB) +
		" 2>&1\necho filled\nexec sleep 600\n"
	w.attack("fill", "bin/fill.sh", 1, map[string]string{"bin/fill.sh": fill})
	var cause string
	harness.Eventually(t, 3*waitLong, pollEvery, func() bool {
		code, body := w.search.Do(http.MethodGet, "/api/job/events/executions?namespace=search&jobName=fill", nil)
		var page struct {
			Rows []struct {
				FailureCause *string `json:"failureCause"`
			} `json:"rows"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
			return false
		}
		for _, r := range page.Rows {
			if r.FailureCause != nil && *r.FailureCause != "" {
				cause = *r.FailureCause
				return true
			}
		}
		return false
	}, "search's sandbox to be stopped at its disk limit")
	if !strings.Contains(cause, "disk limit") {
		t.Errorf("the filled sandbox's task failed with %q, want its disk limit named", cause)
	}
	if !alive(w.payPid) {
		t.Errorf("pay's task %d did not survive", w.payPid)
	}
	w.admin.Must(http.MethodPut, "/api/namespaces/pay/secrets/after-fill", map[string]any{"value": "x"})
	// The space the registry keeps for a full disk: allocated, root's,
	// 0600, in the data directory no task sees (internal/diskreserve
	// fills a small file system to show commits go on with it).
	st, err := os.Stat(filepath.Join(w.data, "disk-reserve"))
	if err != nil {
		t.Fatalf("the disk reserve: %v", err)
	}
	if sys := st.Sys().(*syscall.Stat_t); st.Mode().Perm() != 0o600 || sys.Uid != 0 || sys.Blocks*512 < 64<<20 {
		t.Errorf("the disk reserve: mode %v, uid %d, %d bytes allocated; want root's 0600 holding 64 MB", st.Mode(), sys.Uid, sys.Blocks*512)
	}
}

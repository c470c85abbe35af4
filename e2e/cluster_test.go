//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// clusterScriptBound bounds each cluster.sh call (up includes a fresh
// MariaDB and three JVMs on a busy 2-core machine).
const clusterScriptBound = 4 * time.Minute

// clusterScript runs scripts/cluster.sh CMD DIR with env and returns its
// stdout, its stderr and its exit code.
func clusterScript(t *testing.T, env []string, cmd, dir string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterScriptBound)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "../scripts/cluster.sh", cmd, dir)
	c.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("cluster.sh %s did not finish within %v\nstdout:\n%s\nstderr:\n%s", cmd, clusterScriptBound, &out, &errb)
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("cluster.sh %s: %v", cmd, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// consecutivePorts finds n consecutive free loopback ports below the kernel's
// ephemeral range: cluster.sh starts ZooKeeper and MariaDB before its
// schedulers bind, and a port in the ephemeral range checked free can be
// taken meanwhile as the local port of any outgoing connection or port-0
// listener on the machine (a scheduler then failed with "address already in
// use"); below it only another listener picking a fixed port can.
func consecutivePorts(t *testing.T, n int) int {
	t.Helper()
	lo := ephemeralLow()
	const floor = 20000
	for range 200 {
		base := floor + rand.IntN(max(lo-floor-n, 1))
		ok := true
		for p := base; p < base+n && ok; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if ok = err == nil; ok {
				ln.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports between %d and %d", n, floor, lo)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	if lo, err := strconv.Atoi(f[0]); err == nil && lo > 20000+100 {
		return lo
	}
	return 32768
}

func needClusterServices(t *testing.T) {
	t.Helper()
	for _, b := range []string{"java", "mariadbd", "mariadb-install-db"} {
		if _, err := exec.LookPath(b); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing in CI: run scripts/services.sh install", b)
			}
			t.Skipf("%s is missing; run scripts/services.sh install", b)
		}
	}
}

var schedulerURLLine = regexp.MustCompile(`(?m)^scheduler (\d): (http://127\.0\.0\.1:\d+)$`)

// scripts/cluster.sh up, status and down: the whole cluster shape from
// local processes (a 3-server ZooKeeper ensemble, MariaDB, mesos-local,
// EJ_TEST_CLUSTER_SCHEDULERS schedulers, default 3: one leads, two are
// standbys), a job run through it with its history in MariaDB, and a down
// that leaves no process behind.
func TestClusterScript(t *testing.T) {
	needClusterServices(t)
	n := 3
	if v := os.Getenv("EJ_TEST_CLUSTER_SCHEDULERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 9 {
			t.Fatalf("EJ_TEST_CLUSTER_SCHEDULERS=%q: want 1..9", v)
		}
	}
	dir := filepath.Join(t.TempDir(), "c")
	base := consecutivePorts(t, n+1) // the schedulers' ports and mesos-local's, apart from one another
	env := []string{"SCHEDULERS=" + strconv.Itoa(n), "BASE_PORT=" + strconv.Itoa(base),
		"MESOS_PORT=" + strconv.Itoa(base+n), "BIN_DIR=" + filepath.Dir(schedulerBin)}
	t.Cleanup(func() {
		if _, errs, code := clusterScript(t, nil, "down", dir); code != 0 {
			t.Errorf("cleanup: cluster.sh down exited %d: %s", code, errs)
		}
	})
	t.Cleanup(func() { // before down: the logs are still there
		if t.Failed() {
			for i := 1; i <= n; i++ {
				b, _ := os.ReadFile(filepath.Join(dir, "logs", fmt.Sprintf("scheduler-%d.log", i)))
				t.Logf("scheduler %d log:\n%s", i, harness.Tail(string(b), 120))
			}
		}
	})
	out, errs, code := clusterScript(t, env, "up", dir)
	if code != 0 {
		t.Fatalf("cluster.sh up exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	urls := schedulerURLLine.FindAllStringSubmatch(out, -1)
	if len(urls) != n || urls[0][2] != fmt.Sprintf("http://127.0.0.1:%d", base) {
		t.Fatalf("up printed scheduler URLs %q, want %d from port %d:\n%s", urls, n, base, out)
	}
	pids := checkStatus(t, dir, n)

	// cluster.sh started it: only its log is read (failed tasks).
	s := &scheduler{t: t, base: urls[0][2],
		Proc: &harness.Proc{Name: "scheduler-1", LogPath: filepath.Join(dir, "logs", "scheduler-1.log")}}
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	jobOut := outDir(t)
	s.registerJob(recorderJob("through_cluster", "rec", jobOut, 2))
	runs := s.runAndWait("through_cluster", jobOut, 2)
	uniqueTaskIDs(t, runs)
	eventually(t, waitLong, func() bool {
		var page struct {
			Total int `json:"total"`
		}
		s.getJSON("/api/job/events/executions?jobName=through_cluster", &page)
		return page.Total == 2
	}, "the two executions in the MariaDB history")

	if _, errs, code := clusterScript(t, nil, "down", dir); code != 0 {
		t.Fatalf("cluster.sh down exited %d: %s", code, errs)
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs after down", name, pid)
		}
	}
	st, _, code := clusterScript(t, nil, "status", dir)
	if code == 0 || strings.Contains(st, "running") {
		t.Errorf("status after down exited %d:\n%s", code, st)
	}
	if _, errs, code := clusterScript(t, nil, "down", dir); code != 0 {
		t.Errorf("a second down exited %d: %s", code, errs)
	}
}

var statusLine = regexp.MustCompile(`(?m)^(zookeeper server \d|mariadb|mesos-local|scheduler \d): running, pid (\d+)(.*)$`)

// checkStatus runs cluster.sh status and returns the pid of each process
// it reports running; all 3 + 1 + 1 + n must run and every scheduler
// names a leader.
func checkStatus(t *testing.T, dir string, n int) map[string]int {
	t.Helper()
	st, errs, code := clusterScript(t, nil, "status", dir)
	if code != 0 {
		t.Fatalf("cluster.sh status exited %d\n%s%s", code, st, errs)
	}
	pids := map[string]int{}
	for _, m := range statusLine.FindAllStringSubmatch(st, -1) {
		pids[m[1]], _ = strconv.Atoi(m[2])
		if strings.HasPrefix(m[1], "scheduler") && !strings.Contains(m[3], `"leader"`) {
			t.Errorf("status names no leader for %s: %s", m[1], m[0])
		}
	}
	if len(pids) != 5+n {
		t.Fatalf("status shows %d running processes, want %d:\n%s", len(pids), 5+n, st)
	}
	return pids
}

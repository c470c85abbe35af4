//go:build e2e

package ha

import (
	"context"
	"fmt"
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

// Bounds on waiting for real processes on a busy 2-core machine. Nothing
// asserts on how long anything took; these only end a stuck test.
const (
	waitLong  = 60 * time.Second
	pollEvery = 50 * time.Millisecond
)

// eventually polls cond until it holds; the test fails with what was
// awaited if it does not within timeout.
func eventually(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	harness.Eventually(t, timeout, pollEvery, cond, what, args...)
}

// poll is eventually without failing: it reports whether cond held in time.
func poll(timeout time.Duration, cond func() bool) bool {
	return harness.Poll(timeout, pollEvery, cond)
}

// sleepUntil sleeps until the instant at (fault injection is timed against
// the cron fires planned in advance; it waits for no condition).
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

// mesosLocal is one bin/mesos-local process.
type mesosLocal struct {
	*harness.Proc
	url string
}

var mesosLocalURL = regexp.MustCompile(`(?m)^mesos-local: listening on (http://127\.0\.0\.1:\d+)$`)

// startMesosLocal starts bin/mesos-local in dir and stops it at cleanup,
// then every executor it left running (mesos-local --recover=cleanup).
func startMesosLocal(t testing.TB, dir string) *mesosLocal {
	t.Helper()
	port := harness.FreePort(t)
	bin, work := filepath.Join(binDir, "mesos-local"), filepath.Join(dir, "mesos")
	m := &mesosLocal{Proc: harness.Start(t, "mesos-local", filepath.Join(dir, "mesos-local.log"),
		exec.Command(bin, "--port", strconv.Itoa(port), "--work-dir", work, "--cpus", "4", "--mem-mb", "8192"))}
	t.Cleanup(func() {
		m.Stop(t)
		harness.StopEverything(t, work, bin, "--work-dir", work, "--port", strconv.Itoa(port))
		if t.Failed() {
			t.Logf("mesos-local log (%s):\n%s", m.LogPath, harness.Tail(m.Log(), 60))
		}
	})
	m.AwaitReady(t, waitLong, pollEvery, func() bool {
		if sm := mesosLocalURL.FindStringSubmatch(m.Log()); sm != nil {
			m.url = sm[1]
		}
		return m.url != ""
	}, "mesos-local to print its URL")
	return m
}

// ensemble is a 3-server ZooKeeper ensemble of a test's own
// (scripts/services.sh), for tests that stop servers.
type ensemble struct {
	t       testing.TB
	dir     string
	servers string // the connect string of all three
}

// ensembleScriptBound bounds one services.sh call (a JVM start on a busy
// machine).
const ensembleScriptBound = 2 * time.Minute

func startEnsemble(t testing.TB) *ensemble {
	t.Helper()
	for _, b := range []string{"java", "bash"} {
		if _, err := exec.LookPath(b); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing in CI: run scripts/services.sh install", b)
			}
			t.Skipf("%s is missing; run scripts/services.sh install", b)
		}
	}
	e := &ensemble{t: t, dir: t.TempDir()}
	t.Cleanup(func() {
		if err := e.script("stop-ensemble"); err != nil {
			t.Errorf("stop the ensemble: %v", err)
		}
	})
	if err := e.script("start-ensemble"); err != nil {
		t.Fatalf("start a ZooKeeper ensemble: %v", err)
	}
	env, err := os.ReadFile(filepath.Join(e.dir, "ensemble.env"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`EJ_TEST_ZK_ENSEMBLE=(\S+)`).FindSubmatch(env)
	if m == nil {
		t.Fatalf("no EJ_TEST_ZK_ENSEMBLE in %s:\n%s", e.dir, env)
	}
	e.servers = string(m[1])
	return e
}

// script runs services.sh CMD DIR [N].
func (e *ensemble) script(cmd string, n ...int) error {
	ctx, cancel := context.WithTimeout(context.Background(), ensembleScriptBound)
	defer cancel()
	args := []string{servicesScript, cmd, e.dir}
	for _, v := range n {
		args = append(args, strconv.Itoa(v))
	}
	out, err := exec.CommandContext(ctx, "bash", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("services.sh %s: %v\n%s", strings.Join(args[1:], " "), err, out)
	}
	return nil
}

func (e *ensemble) stopNode(n int) {
	e.t.Helper()
	if err := e.script("stop-zk-node", n); err != nil {
		e.t.Fatal(err)
	}
}

func (e *ensemble) startNode(n int) {
	e.t.Helper()
	if err := e.script("start-zk-node", n); err != nil {
		e.t.Fatal(err)
	}
}

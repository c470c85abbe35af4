//go:build e2e

package realmesos

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestTaskUserWithFrameworkAuthentication: on a master that authenticates frameworks, with
// mesos_task_users naming the default namespace's user, the agent runs that namespace's
// executor and its tasks as that user (what the job writes is that user's), and the
// scheduler warns that the agent (posix isolation only) does not keep namespaces apart.
func TestTaskUserWithFrameworkAuthentication(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a Mesos agent switches to the task's user only as root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	m := startMesos(t, mesosOpts{credentials: map[string]string{"ej": "users-secret"}})
	// The user reaches its sandbox under the agent's work directory, the executor's app
	// cache and the job's output: the test's own directories are root's 0700 otherwise.
	for _, d := range []string{filepath.Dir(m.dir), m.dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache, out := filepath.Join(m.dir, "cache"), filepath.Join(m.dir, "out")
	for _, d := range []string{cache, out} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	s := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(), name: "ej-users",
		extra: []string{"--mesos-principal", "ej", "--mesos-secret", "users-secret", "--mesos-task-users", "default=nobody",
			"--executor-cache-dir", cache}})[0]
	s.publishApp("recorder", recorderURL(), "bin/record.sh")
	s.registerJob("user_job", "recorder", "", out, 1)
	s.trigger("user_job")
	eventually(t, waitLong, func() bool { return len(runsIn(t, out)) >= 1 }, "the job to run as nobody")
	st, err := os.Stat(filepath.Join(out, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := strconv.FormatUint(uint64(st.Sys().(*syscall.Stat_t).Uid), 10); uid != nobody.Uid {
		t.Errorf("the job's output is uid %s's, want nobody's (%s)", uid, nobody.Uid)
	}
	eventually(t, waitLong, func() bool { return strings.Contains(s.Log(), "does not keep namespaces' tasks apart") },
		"the scheduler to warn that the agent lacks namespaces/pid and filesystem/linux")
	if line := grepLine(s.Log(), "does not keep namespaces' tasks apart"); !strings.Contains(line, "filesystem/linux,namespaces/pid") {
		t.Errorf("warning does not name the isolators: %s", line)
	}
}

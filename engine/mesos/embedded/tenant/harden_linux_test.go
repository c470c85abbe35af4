//go:build linux

package tenant

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Every start, not most: the executor of each of many starts runs with
// no_new_privs, no capability in any set (so a setuid program gains
// none), and the seccomp filter.
func TestInitHardensEveryStart(t *testing.T) {
	needRoot(t)
	sandbox := t.TempDir()
	_ = os.Chmod(filepath.Dir(sandbox), 0o755)
	const uid = 1879048192 + 4245
	if err := os.Chown(sandbox, uid, uid); err != nil {
		t.Fatal(err)
	}
	const starts = 30
	for i := range starts {
		out := filepath.Join(sandbox, fmt.Sprint(i))
		script := "grep -E '^(NoNewPrivs|Seccomp|Cap(Inh|Prm|Eff|Bnd|Amb)):' /proc/self/status > " + out +
			"; readlink /proc/self/ns/ipc > " + out + ".ipc"
		if b, err := confined(t, uid, nil, []string{sandbox}, "/bin/sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("start %d: %v: %s", i, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if why := unprivileged(string(b)); why != "" {
			t.Errorf("start %d: %s:\n%s", i, why, b)
		}
		ours, _ := os.Readlink("/proc/self/ns/ipc")
		if theirs, _ := os.ReadFile(out + ".ipc"); len(theirs) == 0 || strings.TrimSpace(string(theirs)) == ours {
			t.Errorf("start %d: the executor's IPC namespace %q is the host's %q", i, theirs, ours)
		}
	}
}

// unprivileged says what in a /proc/PID/status excerpt is not as a
// confined executor's must be ("": all is).
func unprivileged(status string) string {
	want := map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "CapInh": "0000000000000000", "CapPrm": "0000000000000000",
		"CapEff": "0000000000000000", "CapBnd": "0000000000000000", "CapAmb": "0000000000000000"}
	for _, line := range strings.Split(status, "\n") {
		k, v, _ := strings.Cut(line, ":")
		if w, ok := want[k]; ok {
			if strings.TrimSpace(v) != w {
				return fmt.Sprintf("%s is %s, want %s", k, strings.TrimSpace(v), w)
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		return fmt.Sprintf("missing %v", want)
	}
	return ""
}

// A setuid-root program started by a task runs without root's powers.
func TestInitSetuidGainsNothing(t *testing.T) {
	needRoot(t)
	mount, err := exec.LookPath("mount")
	if err != nil {
		t.Skip(err)
	}
	if st, err := os.Stat(mount); err != nil || st.Mode()&os.ModeSetuid == 0 {
		t.Skipf("%s is not setuid here", mount)
	}
	sandbox := t.TempDir()
	_ = os.Chmod(filepath.Dir(sandbox), 0o755)
	script := mount + " -t tmpfs none " + sandbox
	if err := confined(t, 1879048192+4246, nil, []string{sandbox}, "/bin/sh", "-c", script).Run(); err == nil {
		t.Fatalf("the tenant mounted a tmpfs with the setuid %s", mount)
	}
}

// Under the filter unshare(CLONE_NEWUSER) is refused with EPERM and
// clone3 with ENOSYS, while forking and running a shell still work. The
// filter is tried in a child of this test binary (it cannot be taken off
// a thread), which needs no root: no_new_privs is all it asks.
func TestFilterDeniesUserNamespaces(t *testing.T) {
	if denyUserNS(runtime.GOARCH) == nil {
		t.Skipf("no filter for %s", runtime.GOARCH)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envFilterProbe+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "probe ok") {
		t.Fatalf("%v: %s", err, out)
	}
}

const envFilterProbe = "ELASTICJOB_TEST_FILTER_PROBE"

// filterProbe runs in the child TestFilterDeniesUserNamespaces starts.
func filterProbe() {
	runtime.LockOSThread()
	fail := func(f string, a ...any) { fmt.Printf(f+"\n", a...); os.Exit(1) }
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("no_new_privs: %v", err)
	}
	if err := installFilter(denyUserNS(runtime.GOARCH)); err != nil {
		fail("%v", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWUSER); !errors.Is(err, unix.EPERM) {
		fail("unshare(CLONE_NEWUSER): %v, want EPERM", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0); e != unix.ENOSYS {
		fail("clone3: %v, want ENOSYS", e)
	}
	if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
		fail("sh -c true under the filter: %v", err)
	}
	if err := exec.Command("unshare", "-U", "true").Run(); err == nil {
		fail("unshare -U ran under the filter")
	}
	fmt.Println("probe ok")
	os.Exit(0)
}

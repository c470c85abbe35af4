//go:build linux

package tenant

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	Init() // the tests start this binary as the init
	if os.Getenv(envFilterProbe) != "" {
		filterProbe()
	}
	os.Exit(m.Run())
}

// confined runs argv through Init (this test binary) as uid in new PID
// and mount namespaces, hiding hide and showing show.
func confined(t testing.TB, uid int, hide, show []string, argv ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := Plan{UID: uid, GID: uid, Hide: hide, Show: show, ReadOnly: []string{filepath.Dir(self)}, Dir: show[0], Argv: argv}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), EnvPlan+"="+p.Encode())
	cmd.Dir = show[0]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: Cloneflags}
	return cmd
}

func needRoot(t testing.TB) {
	if err := Probe(); err != nil {
		t.Skip(err)
	}
}

// Inside: the tenant's uid, only its own processes, the hidden
// directory empty, the shown one writable, orphans reaped by init.
func TestInitConfines(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	secret, sandbox := filepath.Join(base, "data"), filepath.Join(base, "data", "sandbox")
	if err := os.MkdirAll(sandbox, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("the-key"), 0o600); err != nil {
		t.Fatal(err)
	}
	const uid = 1879048192 + 4242
	if err := os.Chown(sandbox, uid, uid); err != nil {
		t.Fatal(err)
	}
	// A file outside /tmp (private anyway), open to everyone on the host,
	// hidden by /dev/null; a directory likewise, hidden by a tmpfs.
	open, err := os.MkdirTemp("/var/lib", "ej-tenant-test-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(open) })
	openFile, openDir := filepath.Join(open, "settings"), filepath.Join(open, "dir")
	if err := os.Mkdir(openDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{openFile, filepath.Join(openDir, "f")} {
		if err := os.WriteFile(f, []byte("open-secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Chmod(open, 0o755)
	hide := []string{secret, openFile, openDir}
	script := `id -u > uid; ls /proc | grep -cE '^[0-9]+$' > procs; cat ../key > key 2>&1; ls -A .. > listing; ` +
		`cat ` + openFile + ` ` + openDir + `/f > open 2>&1; ls -A ` + openDir + ` > open-listing; ` +
		`(sh -c 'exit 0' &); z=1; for i in $(seq 100); do z=$(grep -l '^State:.Z' /proc/[0-9]*/status 2>/dev/null | wc -l); ` +
		`[ "$z" = 0 ] && break; sleep 0.01; done; echo $z > zombies; echo ok > tmp-probe; touch /tmp/mine && echo ok > tmp`
	cmd := confined(t, uid, hide, []string{sandbox}, "/bin/sh", "-c", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(sandbox, name))
		return strings.TrimSpace(string(b))
	}
	if got := read("uid"); got != "1879052434" {
		t.Errorf("uid %q", got)
	}
	if got := read("procs"); got == "" || len(got) > 1 { // a handful: init, sh, ls, grep
		t.Errorf("processes seen: %q", got)
	}
	if got := read("key"); strings.Contains(got, "the-key") {
		t.Errorf("the hidden key was read: %q", got)
	}
	if got := read("listing"); got != "sandbox" {
		t.Errorf("the hidden directory lists %q, want only the sandbox's mount point", got)
	}
	if got := read("open"); strings.Contains(got, "open-secret") || !strings.Contains(got, "No such file") {
		t.Errorf("hidden paths outside /tmp: %q", got)
	}
	if got := read("open-listing"); got != "" {
		t.Errorf("a hidden directory lists %q", got)
	}
	if got := read("zombies"); got != "0" {
		t.Errorf("zombies left: %q", got)
	}
	if got := read("tmp"); got != "ok" {
		t.Errorf("private /tmp: %q", got)
	}
	if _, err := os.Stat("/tmp/mine"); err == nil {
		t.Errorf("/tmp/mine reached the host's /tmp")
	}
	if st, err := os.Stat(filepath.Join(sandbox, "uid")); err != nil || st.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("files written are not the tenant's: %v", err)
	}
}

// Init exits with the executor's status, 128 + the signal that ended it.
func TestInitExitStatus(t *testing.T) {
	needRoot(t)
	sandbox := t.TempDir()
	_ = os.Chmod(filepath.Dir(sandbox), 0o755)
	for script, want := range map[string]int{"exit 3": 3, "kill -TERM $$": 128 + 15} {
		err := confined(t, 1879048192+4243, nil, []string{sandbox}, "/bin/sh", "-c", script).Run()
		var ee *exec.ExitError
		if !asExit(err, &ee) || ee.ExitCode() != want {
			t.Errorf("%q: %v, want exit %d", script, err, want)
		}
	}
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// BenchmarkStart is what tenant isolation adds to an executor's start,
// interleaved so that a busy machine weighs on both alike: /bin/true
// started directly ("off"), or through Init in new PID and mount
// namespaces as another user ("on"), to its end. The init is this test
// binary, or $ELASTICJOB_BENCH_INIT (the executor binary, as the
// scheduler uses it). cpu is the user and system CPU of the process and
// of what it waited for.
func BenchmarkStart(b *testing.B) {
	needRoot(b)
	sandbox := b.TempDir()
	var wall, cpu [2]time.Duration
	for i := 0; i < b.N; i++ {
		for mode := range 2 {
			cmd := exec.Command("/bin/true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if mode == 1 {
				cmd = confined(b, 1879048192+4244, []string{"/var/lib"}, []string{sandbox}, "/bin/true")
				if init := os.Getenv("ELASTICJOB_BENCH_INIT"); init != "" {
					cmd.Path, cmd.Args = init, []string{init}
				}
			}
			t := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			wall[mode] += time.Since(t)
			cpu[mode] += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(wall[0]), "off-ms/op")
	b.ReportMetric(ms(wall[1]), "on-ms/op")
	b.ReportMetric(ms(cpu[0]), "off-cpu-ms/op")
	b.ReportMetric(ms(cpu[1]), "on-cpu-ms/op")
}

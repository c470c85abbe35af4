package cgroups

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A mount table like that of a machine with v1 controllers and an empty
// cgroup2 hierarchy (the unified mount has no controllers).
const hybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:7 - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:40 / /mnt/with\040space rw - cgroup cgroup rw,cpu,cpuacct
`

func TestParseMountinfo(t *testing.T) {
	m, err := parseMountinfo(strings.NewReader(hybrid))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{Memory: "/sys/fs/cgroup/memory", CPU: "/sys/fs/cgroup/cpu",
		CPUAcct: "/sys/fs/cgroup/cpuacct", Pids: "/sys/fs/cgroup/pids"}
	for c, p := range want {
		if m.v1[c] != p {
			t.Errorf("%s mounted at %q, want %q", c, m.v1[c], p)
		}
	}
	if m.v2 != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 at %q", m.v2)
	}
	m, _ = parseMountinfo(strings.NewReader("50 23 0:40 / /mnt/with\\040space rw - cgroup cgroup rw,cpu,cpuacct\n"))
	if m.v1[CPU] != "/mnt/with space" || m.v1[CPUAcct] != "/mnt/with space" {
		t.Errorf("co-mounted cpu,cpuacct with an escaped path: %v", m.v1)
	}
	if _, err := parseMountinfo(strings.NewReader("1 2 - cgroup\n")); err == nil {
		t.Error("a malformed line was accepted")
	}
}

// fakeV2 lays out a directory like a cgroup2 mount offering ctrls and
// returns a mountinfo file naming it (plus v1 mounts in v1dirs).
func fakeMounts(t *testing.T, v2ctrls string, v1 ...string) (string, string) {
	t.Helper()
	root := t.TempDir()
	v2 := filepath.Join(root, "unified")
	must(t, os.MkdirAll(v2, 0o755))
	must(t, os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte(v2ctrls+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(v2, "cgroup.subtree_control"), nil, 0o644))
	lines := "41 31 0:38 / " + v2 + " rw - cgroup2 cgroup2 rw\n"
	for i, c := range v1 {
		d := filepath.Join(root, c)
		must(t, os.MkdirAll(d, 0o755))
		lines += "3" + string(rune('0'+i)) + " 31 0:29 / " + d + " rw - cgroup cgroup rw," + c + "\n"
	}
	mi := filepath.Join(root, "mountinfo")
	must(t, os.WriteFile(mi, []byte(lines), 0o644))
	return mi, root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDetectPrefersUsableV2(t *testing.T) {
	mi, root := fakeMounts(t, "cpuset cpu io memory pids", "memory", "cpu")
	h, err := Detect(Probe{Root: "ej", Mountinfo: mi})
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V2 || strings.Join(h.Controllers(), ",") != "memory,cpu,pids" {
		t.Fatalf("mode %s controllers %v", h.Mode(), h.Controllers())
	}
	b, _ := os.ReadFile(filepath.Join(root, "unified", "cgroup.subtree_control"))
	if string(b) != "+memory +cpu +pids" {
		t.Errorf("root subtree_control %q", b)
	}
	if st, err := os.Stat(filepath.Join(root, "unified", "ej")); err != nil || !st.IsDir() {
		t.Errorf("cgroups root not created: %v", err)
	}
}

func TestDetectFallsBackToV1AndExplains(t *testing.T) {
	mi, root := fakeMounts(t, "", "memory", "cpu", "pids")
	h, err := Detect(Probe{Root: "ej", Mountinfo: mi})
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode() != V1 || h.Mountpoint(Memory) != filepath.Join(root, "memory") || h.Has(CPUAcct) {
		t.Fatalf("mode %s controllers %v", h.Mode(), h.Controllers())
	}
	if _, err := Detect(Probe{Want: V2, Root: "ej", Mountinfo: mi}); err == nil ||
		!strings.Contains(err.Error(), "need memory and cpu") {
		t.Errorf("forced v2 on an empty cgroup2: %v", err)
	}
	mi, _ = fakeMounts(t, "", "pids")
	_, err = Detect(Probe{Root: "ej", Mountinfo: mi})
	if err == nil || !strings.Contains(err.Error(), "cgroup v2:") || !strings.Contains(err.Error(), "cgroup v1:") {
		t.Errorf("no usable cgroups: %v", err)
	}
}

func TestLimitsV2Files(t *testing.T) {
	mi, root := fakeMounts(t, "cpu memory pids")
	h, err := Detect(Probe{Root: "ej", Mountinfo: mi})
	must(t, err)
	for _, d := range []string{"ej", "ej/agent"} { // what the kernel would put in new groups
		must(t, os.MkdirAll(filepath.Join(root, "unified", d), 0o755))
		must(t, os.WriteFile(filepath.Join(root, "unified", d, "cgroup.subtree_control"), nil, 0o644))
	}
	g := h.Group("ej/agent/c1")
	must(t, g.Create())
	dir := filepath.Join(root, "unified", "ej", "agent", "c1")
	if g.Dir(Memory) != dir || g.Spec() != "v2:/ej/agent/c1" {
		t.Fatalf("dir %s spec %s", g.Dir(Memory), g.Spec())
	}
	for _, f := range []string{"memory.max", "cpu.weight", "cpu.max", "pids.max"} {
		must(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644)) // the kernel's interface files
	}
	must(t, g.SetLimits(Limits{MemoryBytes: 64 << 20, CPUs: 0.5, CPUQuota: true, Pids: 100}))
	want := map[string]string{"memory.max": "67108864", "cpu.weight": "20", "cpu.max": "50000 100000", "pids.max": "100"}
	for f, v := range want {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != v {
			t.Errorf("%s = %q, want %q", f, b, v)
		}
	}
	// Every parent on the way got the controllers for its children.
	if b, _ := os.ReadFile(filepath.Join(root, "unified", "ej", "agent", "cgroup.subtree_control")); string(b) != "+memory +cpu +pids" {
		t.Errorf("parent subtree_control %q", b)
	}
	must(t, g.SetLimits(Limits{CPUs: 2}))
	if b, _ := os.ReadFile(filepath.Join(dir, "cpu.max")); string(b) != "max 100000" {
		t.Errorf("no quota: cpu.max %q", b)
	}
}

func TestArgvAndSpec(t *testing.T) {
	mi, _ := fakeMounts(t, "", "memory", "cpu")
	h, err := Detect(Probe{Root: "ej", Mountinfo: mi})
	must(t, err)
	g := h.Group("/ej//a/../b/")
	if g.Path() != "/ej/b" {
		t.Fatalf("path %q", g.Path())
	}
	argv := g.Argv([]string{"/bin/echo", "hi"})
	if argv[0] != "/bin/sh" || argv[4] != "0" || argv[5] != "2" || !strings.HasSuffix(argv[6], "/memory/ej/b/tasks") ||
		!strings.HasSuffix(argv[7], "/cpu/ej/b/tasks") || argv[8] != "/bin/echo" || argv[9] != "hi" {
		t.Fatalf("argv %q", argv)
	}
	if g.CloneDir() != "" {
		t.Error("v1 offers no CLONE_INTO_CGROUP")
	}
	mode, p, err := ParseSpec(g.Spec())
	if err != nil || mode != V1 || p != "/ej/b" {
		t.Fatalf("ParseSpec(%q) = %s %s %v", g.Spec(), mode, p, err)
	}
	for _, bad := range []string{"", "v3:/x", "v1:x", "v1"} {
		if _, _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
}

func TestConversions(t *testing.T) {
	for _, c := range []struct {
		cpus                  float64
		shares, weight, quota int64
	}{{1, 1024, 39, 100000}, {0.001, 2, 1, 1000}, {0.1, 102, 4, 10000}, {4, 4096, 157, 400000}} {
		if Shares(c.cpus) != c.shares || Weight(c.cpus) != c.weight || Quota(c.cpus) != c.quota {
			t.Errorf("cpus %v: shares %d weight %d quota %d", c.cpus, Shares(c.cpus), Weight(c.cpus), Quota(c.cpus))
		}
	}
}

// In v2 the prelude writes its own pid to cgroup.procs, then execs: the
// pid the command sees is the one written (run here against a plain file
// standing in for cgroup.procs).
func TestArgvV2WritesItsPid(t *testing.T) {
	mi, root := fakeMounts(t, "cpu memory pids")
	h, err := Detect(Probe{Root: "ej", Mountinfo: mi})
	must(t, err)
	g := h.Group("ej")
	procs := filepath.Join(root, "unified", "ej", "cgroup.procs")
	must(t, os.WriteFile(procs, nil, 0o644))
	if got := g.CloneDir(); got != filepath.Dir(procs) && kernelAtLeast(5, 7) {
		t.Errorf("CloneDir %q", got)
	}
	argv := g.Argv([]string{"/bin/sh", "-c", "echo $$"})
	if argv[4] != "$$" || argv[5] != "1" || argv[6] != procs {
		t.Fatalf("argv %q", argv)
	}
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	must(t, err)
	written, _ := os.ReadFile(procs)
	if strings.TrimSpace(string(written)) != strings.TrimSpace(string(out)) || len(out) < 2 {
		t.Fatalf("wrote %q, the command's pid is %q", written, out)
	}
	must(t, os.RemoveAll(filepath.Dir(procs))) // joining fails: exit 125, the command does not run
	err = exec.Command(argv[0], argv[1:]...).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 {
		t.Fatalf("join failure: %v", err)
	}
}

// A group Create makes holds the kernel's CPU defaults (weight 100 in v2,
// no quota, the default period): SetLimits writes only what differs from
// them. A group that was there already is written in full, and so is one
// removed and made again.
func TestFreshGroupWritesOnlyWhatDiffers(t *testing.T) {
	mi, root := fakeMounts(t, "cpu memory pids")
	h, err := Detect(Probe{Root: "ej", Mountinfo: mi})
	must(t, err)
	for _, d := range []string{"ej", "ej/agent", "ej/agent/old"} {
		must(t, os.MkdirAll(filepath.Join(root, "unified", d), 0o755))
		must(t, os.WriteFile(filepath.Join(root, "unified", d, "cgroup.subtree_control"), nil, 0o644))
	}
	files := []string{"memory.max", "cpu.weight", "cpu.max", "pids.max"}
	kernel := func(dir string) { // what the kernel puts in a new group's files, marked
		for _, f := range files {
			must(t, os.WriteFile(filepath.Join(dir, f), []byte("kernel"), 0o644))
		}
	}
	read := func(dir, f string) string { b, _ := os.ReadFile(filepath.Join(dir, f)); return string(b) }
	oneCPU := Limits{MemoryBytes: 64 << 20, CPUs: 1, Pids: 100}

	fresh := h.Group("ej/agent/task")
	must(t, fresh.Create())
	dir := fresh.Dir(Memory)
	kernel(dir)
	must(t, fresh.SetLimits(oneCPU))
	if read(dir, "cpu.weight") != "39" || read(dir, "cpu.max") != "kernel" ||
		read(dir, "memory.max") != "67108864" || read(dir, "pids.max") != "100" {
		t.Errorf("fresh group: %v, want cpu.max left as the kernel made it and the rest written",
			[]string{read(dir, "memory.max"), read(dir, "cpu.weight"), read(dir, "cpu.max"), read(dir, "pids.max")})
	}
	must(t, fresh.SetLimits(Limits{CPUs: 0.5, CPUQuota: true}))
	if read(dir, "cpu.weight") != "20" || read(dir, "cpu.max") != "50000 100000" {
		t.Errorf("half a CPU, capped: weight %q max %q, want both written", read(dir, "cpu.weight"), read(dir, "cpu.max"))
	}

	old := h.Group("ej/agent/old")
	must(t, old.Create())
	kernel(old.Dir(Memory))
	must(t, old.SetLimits(oneCPU))
	if read(old.Dir(Memory), "cpu.weight") != "39" || read(old.Dir(Memory), "cpu.max") != "max 100000" {
		t.Errorf("a group that was there: weight %q max %q, want both written", read(old.Dir(Memory), "cpu.weight"), read(old.Dir(Memory), "cpu.max"))
	}

	// Made again after its removal: the values written before are gone with it.
	must(t, os.RemoveAll(dir))
	must(t, fresh.Create())
	kernel(dir)
	must(t, fresh.SetLimits(Limits{CPUs: 0.5, Pids: 100}))
	if read(dir, "cpu.weight") != "20" || read(dir, "pids.max") != "100" {
		t.Errorf("made again: weight %q pids %q, want both written again", read(dir, "cpu.weight"), read(dir, "pids.max"))
	}
}

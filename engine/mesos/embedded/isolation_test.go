package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/resources"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/cgroups/cgroupstest"
	"github.com/ejcloud/elasticjob/engine/mesos/agents"
)

// isolatedCluster is a cluster that must isolate with cgroups (the test
// skips where it cannot, see cgroupstest).
func isolatedCluster(t *testing.T, mutate func(*Config)) *Cluster {
	t.Helper()
	cgroupstest.Require(t)
	c := newCluster(t, func(cfg *Config) {
		cfg.CgroupsRoot = cgroupstest.Root
		if mutate != nil {
			mutate(cfg)
		}
	})
	if !c.iso.on() {
		t.Fatalf("isolation off: %s", c.iso.reason)
	}
	return c
}

func containerOf(c *Cluster, executorID string) *cgroups.Group {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fw := range c.frameworks {
		if e := fw.executors[execKey{c.AgentID(), executorID}]; e != nil {
			return e.cgroup
		}
	}
	return nil
}

func memLimitMB(g *cgroups.Group) int64 { return g.Stats().MemoryLimit >> 20 }

// The executor runs in its own group inside a container group whose
// limits follow its live tasks; the executor is told where it is; the
// container is removed when the executor ends.
func TestContainerLimitsFollowTasks(t *testing.T) {
	c := isolatedCluster(t, func(cfg *Config) { cfg.PidsMax = 100 })
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "e1", "1", 0.5, 32)
	s.launch(s.offer(), taskInfo(c, "t1", "hang", ex, 1, 64))
	s.ack(s.update("t1"))
	g := containerOf(c, "e1")
	if g == nil {
		t.Fatal("executor has no cgroup")
	}
	// The container's limits (an envelope around the per-task groups) are
	// rounded up to 64 MB steps; pids are exact.
	if got := memLimitMB(g); got != 128 {
		t.Errorf("container memory limit %d MB, want 96 rounded up to 128", got)
	}
	// The groups' names (tenants', containers', tasks' ids) are listed by
	// root alone: every user reads the cgroup file system.
	for _, grp := range []*cgroups.Group{c.iso.agent, g} {
		for _, ctl := range grp.Hierarchy().Controllers() {
			if st, err := os.Stat(grp.Dir(ctl)); err != nil || st.Mode().Perm() != 0o711 {
				t.Errorf("%s: %v, %v; want mode 0711", grp.Dir(ctl), st.Mode(), err)
			}
		}
	}
	leaf := g.Child("executor")
	if got := memLimitMB(leaf); got != 32 {
		t.Errorf("executor memory limit %d MB, want 32", got)
	}
	t.Logf("executor memory usage %d KB", leaf.Stats().MemoryUsage>>10)
	if pid := c.Snapshot().Executors[0].PID; !slices.Contains(leaf.Procs(), pid) {
		t.Errorf("executor %d not in %s (%v)", pid, leaf.Path(), leaf.Procs())
	}
	want := "ELASTICJOB_CGROUP=" + string(g.Hierarchy().Mode()) + ":/" + path.Join(cgroupstest.Root, c.AgentID(), c.Snapshot().Executors[0].containerID(c))
	if env := readFile(t, c, c.Snapshot().Executors[0].Directory+"/env.txt"); !strings.Contains(env, want) ||
		!strings.Contains(env, "ELASTICJOB_CGROUP_PIDS_MAX=100") {
		t.Errorf("executor env lacks %s:\n%s", want, env)
	}
	s.launch(s.freshOffer(), taskInfo(c, "t2", "hang", ex, 1, 128))
	s.ack(s.update("t2"))
	if got := memLimitMB(g); got != 256 {
		t.Errorf("with two tasks: %d MB, want 224 rounded up to 256", got)
	}
	if g.Hierarchy().Has(cgroups.Pids) {
		if b, _ := os.ReadFile(g.Dir(cgroups.Pids) + "/pids.max"); strings.TrimSpace(string(b)) != "300" {
			t.Errorf("container pids.max %q, want 300 (100 each for the executor and two tasks)", b)
		}
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}})
	s.ack(s.update("t1"))
	if got := memLimitMB(g); got != 192 {
		t.Errorf("after t1 ended: %d MB, want 160 rounded up to 192", got)
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_SHUTDOWN, Shutdown: &scheduler.Call_Shutdown{
		ExecutorID: mesos.ExecutorID{Value: "e1"}, AgentID: mesos.AgentID{Value: c.AgentID()}}})
	s.next(scheduler.Event_FAILURE)
	if g.Exists() {
		t.Error("container cgroup outlived its executor")
	}
}

// containerID finds the container id in the executor's sandbox path.
func (v ExecutorView) containerID(c *Cluster) string { return path.Base(v.Directory) }

// An executor that outgrows its own memory is killed by the kernel, and
// its tasks fail with a message that says so.
func TestExecutorKilledForItsMemory(t *testing.T) {
	c := isolatedCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hog", execInfo(t, "e1", "1", 0.5, 64), 1, 64))
	s.ack(s.update("t1"))
	st := s.update("t1")
	if st.GetState() != mesos.TASK_FAILED || !strings.Contains(st.GetMessage(), "memory limit of 64 MB exceeded") {
		t.Fatalf("update %s %q", st.GetState(), st.GetMessage())
	}
}

// After a kill -9 the agent's processes and cgroups outlive it; the next
// start from the same work directory has the same agent id and destroys
// them.
func TestLeftoverCgroupsDestroyedAtRestart(t *testing.T) {
	h, _ := cgroupstest.Require(t)
	work := t.TempDir()
	first := newCluster(t, func(cfg *Config) { cfg.WorkDir, cfg.CgroupsRoot = work, cgroupstest.Root })
	agentID := first.AgentID()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	left := h.Group(path.Join(cgroupstest.Root, agentID, "c-left", "executor"))
	if err := left.Create(); err != nil {
		t.Fatal(err)
	}
	argv := left.Argv([]string{"sleep", "300"})
	orphan := exec.Command(argv[0], argv[1:]...)
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = orphan.Process.Kill(); _ = orphan.Wait() })
	eventually(t, "the orphan in its cgroup", func() bool { return slices.Contains(left.Procs(), orphan.Process.Pid) })
	second := newCluster(t, func(cfg *Config) { cfg.WorkDir, cfg.CgroupsRoot = work, cgroupstest.Root })
	if second.AgentID() != agentID {
		t.Fatalf("agent id %s after restart, want %s", second.AgentID(), agentID)
	}
	var ee *exec.ExitError
	if err := orphan.Wait(); !errors.As(err, &ee) {
		t.Fatalf("orphan: %v, want killed", err)
	}
	if h.Group(path.Join(cgroupstest.Root, agentID, "c-left")).Exists() {
		t.Fatal("leftover cgroup not removed")
	}
}

type stateIsolation struct {
	Flags     map[string]string `json:"flags"`
	Isolation IsolationView     `json:"isolation"`
}

func getStateIsolation(t *testing.T, c *Cluster) stateIsolation {
	t.Helper()
	resp, err := http.Get(c.URL() + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st stateIsolation
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStateReportsIsolation(t *testing.T) {
	off := newCluster(t, func(cfg *Config) { cfg.Isolation = IsolationOff })
	st := getStateIsolation(t, off)
	if st.Flags["isolation"] != "posix/cpu,posix/mem" || st.Isolation.Mode != "off" || st.Isolation.Enforced ||
		!strings.Contains(st.Isolation.Reason, "turned off") {
		t.Fatalf("off: %+v", st)
	}
	on := isolatedCluster(t, nil)
	st = getStateIsolation(t, on)
	if !strings.HasPrefix(st.Flags["isolation"], "cgroups/cpu,cgroups/mem") || !st.Isolation.Enforced ||
		(st.Isolation.Mode != "v1" && st.Isolation.Mode != "v2") || st.Isolation.Cgroup != "/"+path.Join(cgroupstest.Root, on.AgentID()) {
		t.Fatalf("on: %+v", st)
	}
	if on.Snapshot().Isolation.Mode != st.Isolation.Mode {
		t.Fatal("Snapshot and /state disagree")
	}
	// What the scheduler's GET /api/operate/cluster shows per agent.
	for _, c := range []*Cluster{off, on} {
		cl := agents.New(c.URL())
		ags, err := cl.Agents(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		cl.FillIsolation(t.Context(), ags)
		want := c.Snapshot().Isolation
		if got := ags[0].Isolation; got == nil || got.Mode != want.Mode || got.Enforced != want.Enforced ||
			got.Isolators != want.Isolators || got.Reason != want.Reason {
			t.Fatalf("agents client sees %+v, agent says %+v", got, want)
		}
	}
}

func TestIsolationSettings(t *testing.T) {
	if _, err := New(Config{WorkDir: t.TempDir(), Isolation: "cgroups"}); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown mode: %v", err)
	}
	if _, err := New(Config{WorkDir: t.TempDir(), CgroupsRoot: "../x"}); !errors.Is(err, ErrConfig) {
		t.Errorf("cgroups root escaping the hierarchy: %v", err)
	}
	// A forced mode that is unusable fails the start instead of silently
	// enforcing nothing.
	cgroupstest.Require(t)
	for _, mode := range []string{IsolationV1, IsolationV2} {
		c, err := New(Config{WorkDir: t.TempDir(), Isolation: mode, CgroupsRoot: cgroupstest.Root})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Start(context.Background())
		if err == nil {
			if got := string(c.iso.mode); got != mode {
				t.Errorf("forced %s, got %s", mode, got)
			}
		} else if t.Logf("forced %s: %v", mode, err); !strings.Contains(err.Error(), "isolation "+mode) || !strings.Contains(err.Error(), "cgroup "+mode) {
			t.Errorf("forced %s: %v", mode, err)
		}
		_ = c.Close()
	}
}

// An executor that cannot be started fails its launch as without cgroups,
// though it would start through the cgroup prelude.
func TestMissingExecutorUnderIsolation(t *testing.T) {
	c := isolatedCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "e1", "1", 0.1, 32)
	missing := "/nonexistent/executor"
	ex.Command.Value = &missing
	s.launch(s.offer(), taskInfo(c, "t1", "finish", ex, 1, 64))
	st := s.update("t1")
	if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LAUNCH_FAILED ||
		!strings.Contains(st.GetMessage(), "no such file") {
		t.Fatalf("update %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
	if len(c.iso.agent.Children()) != 0 {
		t.Fatalf("containers left: %v", c.iso.agent.Children())
	}
}

// countingHandler counts the warnings logged.
type countingHandler struct {
	slog.Handler
	mu    *sync.Mutex
	warns *[]string
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.mu.Lock()
		*h.warns = append(*h.warns, r.Message)
		h.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return countingHandler{h.Handler.WithAttrs(as), h.mu, h.warns}
}

// Without usable cgroups (here: none mounted) the agent warns once, runs
// executors unconfined and reports isolation off with the reason.
func TestNoCgroupsWarnsOnceAndReportsOff(t *testing.T) {
	mi := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(mi, []byte("22 1 0:21 / /proc rw - proc proc rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warns []string
	c := newCluster(t, func(cfg *Config) {
		cfg.mountinfo = mi
		cfg.Logger = slog.New(countingHandler{cfg.Logger.Handler(), &mu, &warns})
	})
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "e1", "1", 0.1, 32)
	s.launch(s.offer(), taskInfo(c, "t1", "finish", ex, 1, 64))
	s.ack(s.update("t1"))
	s.ack(s.update("t1"))
	s.launch(s.freshOffer(), taskInfo(c, "t2", "finish", execInfo(t, "e2", "1", 0.1, 32), 1, 64))
	s.ack(s.update("t2"))
	st := getStateIsolation(t, c)
	if st.Flags["isolation"] != "posix/cpu,posix/mem" || st.Isolation.Mode != "off" || st.Isolation.Enforced ||
		!strings.Contains(st.Isolation.Reason, "cgroup v1: memory and cpu hierarchies are not both mounted") {
		t.Fatalf("state %+v", st)
	}
	if env := readFile(t, c, c.Snapshot().Executors[0].Directory+"/env.txt"); strings.Contains(env, "ELASTICJOB_CGROUP") {
		t.Errorf("unconfined executor told of a cgroup:\n%s", env)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warns) != 1 || !strings.Contains(warns[0], "resource isolation off") {
		t.Fatalf("warnings %q, want the one about isolation", warns)
	}
}

func TestContainerLimitsArithmetic(t *testing.T) {
	e := &executor{resources: normalize([]mesos.Resource{scalar("cpus", 0.001), scalar("mem", 16)}), tasks: map[string]*task{
		"live":  {resources: normalize([]mesos.Resource{scalar("cpus", 0.5), scalar("mem", 64)})},
		"ended": {resources: normalize([]mesos.Resource{scalar("cpus", 1), scalar("mem", 512)}), released: true},
	}}
	container, leaf := e.limits(100, true)
	if leaf != (cgroups.Limits{MemoryBytes: 32 << 20, CPUs: 0.01, CPUQuota: true, Pids: 100}) {
		t.Errorf("executor limits %+v: want Mesos' minimums 32 MB and 0.01 CPU", leaf)
	}
	if container.MemoryBytes != 128<<20 || container.CPUs != 0.6 || container.Pids != 200 {
		t.Errorf("container limits %+v: want the executor's plus the live task's (96 MB, 0.51 CPUs, 200 pids) rounded up", container)
	}
	e.resources = nil // an executor declaring nothing leaves its container unlimited
	if container, _ := e.limits(0, false); container.MemoryBytes != 0 || container.CPUs != 0 || container.Pids != 0 {
		t.Errorf("undeclared executor: %+v", container)
	}
}

// At start the agent also removes empty cgroups over an hour old that
// agents killed outright left behind, and nothing else.
func TestStaleCgroupsOfDeadAgentsRemoved(t *testing.T) {
	h, _ := cgroupstest.Require(t)
	root := h.Group(cgroupstest.Root)
	mk := func(name string, age time.Duration) *cgroups.Group {
		g := root.Child(name)
		if err := g.Child("c1").Child("executor").Create(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Destroy(destroyTimeout) })
		then := time.Now().Add(-age)
		for _, c := range h.Controllers() {
			for _, d := range []string{g.Dir(c), g.Child("c1").Dir(c), g.Child("c1").Child("executor").Dir(c)} {
				if err := os.Chtimes(d, then, then); err != nil {
					t.Fatal(err)
				}
			}
		}
		return g
	}
	stamp := strings.ReplaceAll(t.Name(), "/", "_") + strconv.Itoa(os.Getpid())
	dead, fresh, busy := mk("dead-"+stamp, 2*time.Hour), mk("fresh-"+stamp, time.Minute), mk("busy-"+stamp, 2*time.Hour)
	argv := busy.Child("c1").Child("executor").Argv([]string{"sleep", "300"})
	sleeper := exec.Command(argv[0], argv[1:]...)
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	eventually(t, "the sleeper in its cgroup", func() bool { return len(busy.Procs()) == 1 })
	isolatedCluster(t, nil)
	if dead.Exists() {
		t.Error("a dead agent's empty cgroups were kept")
	}
	if !fresh.Child("c1").Child("executor").Exists() || !busy.Child("c1").Child("executor").Exists() {
		t.Error("a fresh or busy cgroup was removed")
	}
}

// scalarSum agrees with mesos-go's fixed-point sum for every name, over
// lists that mix names, types and values that do not add up exactly in
// floating point.
func TestScalarSumIsMesosSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"cpus", "mem", "disk", "gpus"}
	for i := 0; i < 2000; i++ {
		var rs mesos.Resources
		for j := rng.IntN(12); j > 0; j-- {
			name := names[rng.IntN(len(names))]
			if rng.IntN(6) == 0 {
				rs = append(rs, mesos.Resource{Name: "ports", Type: mesos.RANGES.Enum(),
					Ranges: &mesos.Value_Ranges{Range: []mesos.Value_Range{{Begin: 1, End: 9}}}})
				continue
			}
			v := float64(rng.IntN(100000)) / float64([]int{1, 10, 100, 1000, 3, 7}[rng.IntN(6)])
			rs = append(rs, scalar(name, v))
		}
		for _, name := range names {
			want := 0.0
			if r, ok := resources.Name(name).Sum(rs...); ok {
				want = r.GetScalar().GetValue()
			}
			if got := scalarSum(rs, name); got != want {
				t.Fatalf("%s of %v: %v, want %v", name, rs, got, want)
			}
		}
	}
}

// BenchmarkContainerLimits: an executor's container limits with 50 live
// tasks, computed at every launch and end.
func BenchmarkContainerLimits(b *testing.B) {
	e := &executor{resources: normalize([]mesos.Resource{scalar("cpus", 0.1), scalar("mem", 32)}), tasks: map[string]*task{}}
	for i := range 50 {
		e.tasks[strconv.Itoa(i)] = &task{resources: normalize([]mesos.Resource{scalar("cpus", 0.01), scalar("mem", 8), scalar("disk", 1)})}
	}
	b.ReportAllocs()
	for b.Loop() {
		e.limits(4096, false)
	}
}

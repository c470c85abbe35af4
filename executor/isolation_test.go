package executor

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/cgroups/cgroupstest"
	"github.com/ejcloud/elasticjob/executor/process"
)

// isolatedPipeline is a Pipeline whose tasks get cgroups below a fresh
// container group, as under the embedded agent.
func isolatedPipeline(t *testing.T, pidsMax int64) (*Pipeline, *cgroups.Group) {
	t.Helper()
	_, container := cgroupstest.Require(t)
	p := newPipeline(t)
	p.Cgroups = &TaskCgroups{Container: container, PidsMax: pidsMax, CPUQuota: true}
	return p, container
}

// started runs a task in the background and returns its outcome channel
// once the task is running.
func started(t *testing.T, p *Pipeline, ctx context.Context, id string, data []byte, r Resources) <-chan Outcome {
	t.Helper()
	running := make(chan struct{})
	out := make(chan Outcome, 1)
	go func() { out <- p.Run(ctx, id, data, Hooks{Running: func() { close(running) }, Resources: r}) }()
	select {
	case <-running:
	case o := <-out:
		t.Fatalf("task %s ended before running: %+v", id, o)
	case <-time.After(30 * time.Second):
		t.Fatalf("task %s did not start", id)
	}
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processesOf lists live processes whose environment holds marker.
func processesOf(marker string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte(marker)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(d, "stat")); err == nil && !bytes.Contains(st, []byte(") Z ")) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// A shard allocating past its memory limit is killed by the kernel and
// fails with a message saying so, while a sibling task of the same
// executor keeps running; each task's cgroup is gone when it ends.
func TestMemoryLimitFailsOnlyTheOffendingTask(t *testing.T) {
	p, container := isolatedPipeline(t, 64)
	calmID, hogID := "job@-@0@-@READY@-@agent-1@-@calm", "job@-@1@-@READY@-@agent-1@-@hog"
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	calm := started(t, p, ctx, calmID, taskData(scriptURL(t, "calm.sh", "#!/bin/sh\nexec sleep 300\n"), "calm.sh", 0, nil), Resources{CPUs: 0.1, MemMB: 64})
	hog := scriptURL(t, "hog.sh", "#!/bin/sh\necho allocating >&2\ndd if=/dev/zero of=/dev/null bs=256M count=1\n")
	out := p.Run(t.Context(), hogID, taskData(hog, "hog.sh", 1, nil), Hooks{Resources: Resources{CPUs: 0.1, MemMB: 64}})
	if out.State != Failed || !strings.HasPrefix(out.Message, "memory limit of 64 MB exceeded: ") {
		t.Fatalf("hog: %+v", out)
	}
	t.Logf("hog failed: %s", out.Message)
	if container.Child(cgroups.TaskName(hogID)).Exists() {
		t.Error("the hog's cgroup outlived it")
	}
	calmGroup := container.Child(cgroups.TaskName(calmID))
	if n := len(calmGroup.Procs()); n != 1 {
		t.Fatalf("the sibling has %d processes, want its 1 sleep", n)
	}
	select {
	case o := <-calm:
		t.Fatalf("the sibling ended: %+v", o)
	default:
	}
	cancel(process.Kill{Grace: 0})
	if o := <-calm; o.State != Killed {
		t.Fatalf("sibling: %+v", o)
	}
	if calmGroup.Exists() || len(container.Children()) != 0 {
		t.Fatalf("task cgroups left: %v", container.Children())
	}
}

// A fork bomb (bounded at ~2000 processes should the limit fail) is held
// at the pids limit: forks fail in the task, the executor still forks,
// and killing the task leaves no process behind.
func TestForkBombContainedByPidsLimit(t *testing.T) {
	const limit = 32
	p, container := isolatedPipeline(t, limit)
	id := "bomb@-@0@-@READY@-@agent-1@-@" + strings.ReplaceAll(t.Name(), "/", "_") + time.Now().Format("150405.000000")
	bomb := scriptURL(t, "bomb.sh", "#!/bin/sh\nb() { [ \"$1\" -gt 0 ] || exec sleep 300; b $(($1-1)) & b $(($1-1)) & wait; }\nb 10 &\nexec sleep 300\n")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	out := started(t, p, ctx, id, taskData(bomb, "bomb.sh", 0, nil), Resources{CPUs: 0.5, MemMB: 128})
	g := container.Child(cgroups.TaskName(id))
	waitUntil(t, "forks refused by the pids limit", func() bool { return g.Stats().PidsDenied > 0 })
	if st := g.Stats(); st.Pids > limit {
		t.Fatalf("%d processes in the task, limit %d", st.Pids, limit)
	}
	if err := exec.Command("true").Run(); err != nil {
		t.Fatalf("the executor cannot fork beside the bomb: %v", err)
	}
	cancel(process.Kill{Grace: 0})
	if o := <-out; o.State != Killed {
		t.Fatalf("bomb: %+v", o)
	}
	if left := processesOf("ELASTICJOB_TASK_ID=" + id); len(left) > 0 {
		t.Fatalf("processes of the bomb left: %v", left)
	}
	if g.Exists() {
		t.Fatal("the bomb's cgroup is still there")
	}
}

// A busy loop in a task with cpuCount 0.2 gets about 0.2 of a CPU: the
// kernel's own counters (CPU time per CFS period, throttled periods) say
// so over a short window; no wall clock is read.
func TestCPUQuotaHoldsBusyLoop(t *testing.T) {
	p, container := isolatedPipeline(t, 64)
	id := "spin@-@0@-@READY@-@agent-1@-@u"
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	out := started(t, p, ctx, id, taskData(scriptURL(t, "spin.sh", "#!/bin/sh\nwhile :; do :; done\n"), "spin.sh", 0, nil), Resources{CPUs: 0.2, MemMB: 32})
	g := container.Child(cgroups.TaskName(id))
	before := g.Stats()
	const window = 20 // CFS periods of 100 ms in which the loop was runnable
	waitUntil(t, "20 CFS periods", func() bool { return g.Stats().Periods >= before.Periods+window })
	after := g.Stats()
	periods := after.Periods - before.Periods
	throttled := after.Throttled - before.Throttled
	// On a loaded machine the loop may not get its 0.2 of a CPU in a period, and a
	// period in which it does not reach its quota is not throttled: the throttled count
	// speaks of the quota only when the loop was given what the quota allows.
	starved := false
	if after.CPUUsage >= 0 {
		share := float64(after.CPUUsage-before.CPUUsage) / float64(time.Duration(periods)*cgroups.CFSPeriod*time.Microsecond)
		t.Logf("busy loop used %.3f CPU over %d periods (quota 0.2), throttled in %d", share, periods, throttled)
		if share > 0.3 {
			t.Errorf("busy loop used %.3f CPU, more than its 0.2 allows", share)
		}
		if share < 0.02 {
			t.Errorf("busy loop used %.3f CPU: it did not run", share)
		}
		starved = share < 0.18
	}
	if throttled < periods/2 && !starved {
		t.Errorf("throttled in %d of %d periods: the quota does not bind", throttled, periods)
	}
	cancel(process.Kill{Grace: 0})
	<-out
}

func TestTaskResources(t *testing.T) {
	r := taskResources([]mesos.Resource{
		{Name: "cpus", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 0.5}},
		{Name: "mem", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 64}},
		{Name: "mem", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 32}},
		{Name: "disk", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 10}},
	})
	if r != (Resources{CPUs: 0.5, MemMB: 96}) {
		t.Fatalf("%+v", r)
	}
	if n := cgroups.TaskName(strings.Repeat("x", 300)); len(n) > 200 || !strings.HasPrefix(n, "task-xxx") {
		t.Fatalf("long name %q", n)
	}
}

// A group the agent made for the task (root's limits) is used as it is:
// the executor neither rewrites its limits nor removes it (the agent
// does; under a tenant it could do neither).
func TestAgentMadeTaskGroupUsedAsIs(t *testing.T) {
	h, container := cgroupstest.Require(t)
	if !h.Has(cgroups.Pids) {
		t.Skip("no pids controller")
	}
	g := container.Child(cgroups.TaskName("t1"))
	if err := g.Create(); err != nil {
		t.Fatal(err)
	}
	if err := g.SetLimits(cgroups.Limits{Pids: 7}); err != nil {
		t.Fatal(err)
	}
	tc := &TaskCgroups{Container: container, PidsMax: 64}
	c := tc.open("t1", Resources{MemMB: 32})
	if c == nil || c.made {
		t.Fatalf("the agent's group not used as it is: %+v", c)
	}
	if b, _ := os.ReadFile(g.Dir(cgroups.Pids) + "/pids.max"); strings.TrimSpace(string(b)) != "7" {
		t.Errorf("pids.max %q: the executor rewrote the agent's limit", b)
	}
	c.destroy()
	if !g.Exists() {
		t.Error("the executor removed the agent's group")
	}
}

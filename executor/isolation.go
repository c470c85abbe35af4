package executor

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/executor/process"
)

// Resources are a task's resources from its TaskInfo; they become the
// limits of its cgroup.
type Resources struct {
	CPUs  float64
	MemMB float64
}

// TaskCgroups puts every task in a cgroup of its own: a child of the
// container group the agent made for this executor (ELASTICJOB_CGROUP),
// limited to the task's memory and CPUs and to PidsMax processes. The
// kernel's OOM killer and the pids limit then hit the offending task, not
// its siblings or the executor, and the task's OOM counter words its
// failure ("memory limit of 64 MB exceeded"). When the task ends, whatever
// is left in its group (daemonized children included) is killed and the
// group removed.
type TaskCgroups struct {
	Container *cgroups.Group
	PidsMax   int64
	CPUQuota  bool
	Log       *slog.Logger

	warnOnce sync.Once
	selfOnce sync.Once
	self     []string // the executor's own v1 tasks files (nil: start tasks through Argv)
}

// OpenTaskCgroups opens the container group named by spec ("v1:/path",
// see cgroups.Group.Spec).
func OpenTaskCgroups(spec string, pidsMax int64, cpuQuota bool, log *slog.Logger) (*TaskCgroups, error) {
	mode, path, err := cgroups.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	h, err := cgroups.Open(mode, "")
	if err != nil {
		return nil, err
	}
	g := h.Group(path)
	if !g.Exists() {
		return nil, fmt.Errorf("cgroup %s does not exist", spec)
	}
	return &TaskCgroups{Container: g, PidsMax: pidsMax, CPUQuota: cpuQuota, Log: log}, nil
}

// destroyTimeout bounds killing and removing a task's group.
const destroyTimeout = 10 * time.Second

// taskCgroup is one task's group; a nil *taskCgroup is no isolation.
type taskCgroup struct {
	g     *cgroups.Group
	memMB float64
	log   *slog.Logger
	leave []string // the executor's v1 tasks files: fork from inside g (process.Spec.Join)
	made  bool     // made by the executor, which removes it; else the agent does

	mu       sync.Mutex
	oomKills int64 // the OOM kill count last looked at
}

// open finds the task's group the agent made (with the task's limits,
// root's: only its tasks files are the executor's), or, under an agent
// that leaves it to the executor (not confined to a user of its own),
// creates it with its limits. Without a container (tc nil) or when the
// group cannot be made (logged once), the task runs in the executor's
// group, still under the container's limits.
func (tc *TaskCgroups) open(taskID string, r Resources) *taskCgroup {
	if tc == nil {
		return nil
	}
	g := tc.Container.Child(cgroups.TaskName(taskID))
	c := &taskCgroup{g: g, memMB: r.MemMB, log: tc.logger(), leave: tc.selfTasks()}
	if g.Exists() {
		c.oomKills = max(0, g.OOMKills())
		return c
	}
	l := cgroups.Limits{MemoryBytes: int64(r.MemMB * (1 << 20)), CPUs: r.CPUs, CPUQuota: tc.CPUQuota, Pids: tc.PidsMax}
	err := g.Create()
	if err == nil {
		err = g.SetLimits(l)
	}
	if err != nil {
		_ = g.Destroy(destroyTimeout)
		tc.warnOnce.Do(func() {
			tc.logger().Warn("cannot give tasks cgroups of their own; they share the executor's limits", "err", err)
		})
		return nil
	}
	c.made, c.oomKills = true, max(0, g.OOMKills())
	return c
}

// selfTasks are the tasks files of the executor's own v1 group, once: a
// task's process is then forked by a thread that steps into the task's
// group and back (process.Spec.Join). nil in v2, or when the executor's
// groups cannot be read (then the process moves itself, see
// cgroups.Group.Argv).
func (tc *TaskCgroups) selfTasks() []string {
	tc.selfOnce.Do(func() {
		h := tc.Container.Hierarchy()
		if h.Mode() != cgroups.V1 {
			return
		}
		self, err := h.SelfTasksFiles("")
		if err != nil {
			tc.logger().Info("task processes join their cgroups through /bin/sh", "why", err)
			return
		}
		tc.self = self
	})
	return tc.self
}

func (tc *TaskCgroups) logger() *slog.Logger {
	if tc.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return tc.Log
}

// wrap makes spec's process join the group before it runs.
func (c *taskCgroup) wrap(s process.Spec) process.Spec {
	if c == nil {
		return s
	}
	if dir := c.g.CloneDir(); dir != "" { // v2: started in it, no migration
		s.Cgroup = dir
		return s
	}
	if len(c.leave) > 0 {
		s.Join, s.Leave = c.g.TasksFiles(), c.leave
		return s
	}
	argv := c.g.Argv(append([]string{s.Path}, s.Args...))
	s.Path, s.Args = argv[0], argv[1:]
	return s
}

// explain words a failure caused by the memory limit: the OOM killer
// struck in the group since the last look.
func (c *taskCgroup) explain(out Outcome) Outcome {
	if c == nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.g.OOMKills()
	oom := n > c.oomKills
	c.oomKills = max(n, c.oomKills)
	if oom && out.State == Failed {
		limit := "the executor's memory limit exceeded"
		if c.memMB > 0 {
			limit = fmt.Sprintf("memory limit of %s MB exceeded", strconv.FormatFloat(c.memMB, 'f', -1, 64))
		}
		out.Message = limit + ": " + out.Message
	}
	return out
}

// destroy kills what is left in the group and removes it when the
// executor made it (the agent removes the groups it made: the container's
// directory is root's).
func (c *taskCgroup) destroy() {
	if c == nil {
		return
	}
	var err error
	if c.made {
		err = c.g.Destroy(destroyTimeout)
	} else {
		_, err = c.g.Kill(destroyTimeout)
	}
	if err != nil {
		c.log.Warn("task cgroup not fully removed", "cgroup", c.g.Path(), "err", err)
	}
}

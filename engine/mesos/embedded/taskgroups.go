package embedded

import (
	"errors"
	"syscall"

	"github.com/ejcloud/elasticjob/cgroups"
)

// syncTasks makes the groups of e's live tasks that have none yet and
// removes those of the tasks that ended. The agent (root) makes a task's
// group, with the task's limits, before the executor hears of the task:
// the executor (the tenant's user, under Tenancy) is given only the
// group's tasks files, to move the task's process in; the limits and the
// container's directory stay root's, so a task can neither raise its
// pids.max nor make a group of its own where it could.
func (i *isolation) syncTasks(e *executor) {
	if e.cgroup == nil {
		return
	}
	for id, t := range e.tasks {
		if t.released || e.taskGroups[id] != nil {
			continue
		}
		g := e.cgroup.Child(cgroups.TaskName(id))
		if err := i.makeTaskGroup(e, g, i.taskLimits(t)); err != nil {
			// The executor finds no group and runs the task in its own,
			// under the container's limits (root's too).
			i.log.Warn("task runs without a cgroup of its own", "executor_id", e.id, "task_id", id, "err", err)
			_ = g.Remove(0)
			continue
		}
		if e.taskGroups == nil {
			e.taskGroups = map[string]*cgroups.Group{}
		}
		e.taskGroups[id] = g
	}
	for id, g := range e.taskGroups {
		if t := e.tasks[id]; t == nil || t.released {
			delete(e.taskGroups, id)
			i.removeTaskGroup(g)
		}
	}
}

// makeTaskGroup creates g with l and gives e's user its tasks files.
func (i *isolation) makeTaskGroup(e *executor, g *cgroups.Group, l cgroups.Limits) error {
	err := g.Create()
	if err == nil {
		err = g.SetLimits(l)
	}
	if err == nil && e.uid > 0 {
		err = g.ChownFiles(e.uid, e.uid, "tasks", "cgroup.procs")
	}
	return err
}

// taskLimits are the limits of t's own group.
func (i *isolation) taskLimits(t *task) cgroups.Limits {
	return cgroups.Limits{MemoryBytes: mib(scalarSum(t.resources, "mem")), CPUs: scalarSum(t.resources, "cpus"),
		CPUQuota: i.quota, Pids: i.pidsMax}
}

// removeTaskGroup removes an ended task's group: at once when the executor
// has emptied it (it kills what a task leaves before it reports the end),
// one rmdir per hierarchy; else (processes left, or a group a root task
// made below its own) in the background after killing what is left.
func (i *isolation) removeTaskGroup(g *cgroups.Group) {
	err := g.RemoveEmpty()
	if err == nil || !errors.Is(err, syscall.EBUSY) {
		return
	}
	go func() {
		_, err := g.Kill(destroyTimeout)
		if err == nil {
			err = g.Remove(destroyTimeout)
		}
		if err != nil {
			i.log.Warn("task cgroup not fully removed", "cgroup", g.Path(), "err", err)
		}
	}()
}

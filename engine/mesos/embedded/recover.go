package embedded

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// recovery is what a start found of an earlier run of the agent.
type recovery struct {
	frameworks []ckFramework
	alive      map[string]bool      // container ids of executors whose process still runs
	aliveDirs  map[string]bool      // and their sandboxes
	ended      map[string]time.Time // the others, by container id: when they were last seen alive
}

// loadRecovery reads the checkpoint an earlier run left (nothing in
// simulation mode), tells which executors still run and, for those that
// do not, dates their last sign of life: the later of the agent's last
// one (its alive mark) and the last write to their sandbox's logs or
// their tasks' (an executor that outlives the agent logs every attempt to
// reach it).
func (c *Cluster) loadRecovery() recovery {
	r := recovery{alive: map[string]bool{}, aliveDirs: map[string]bool{}, ended: map[string]time.Time{}}
	if c.ck == nil {
		return r
	}
	last := c.ck.lastAlive()
	r.frameworks = c.ck.load()
	now := c.cfg.Clock.Now()
	for _, fw := range r.frameworks {
		fwID := fw.info.GetID().GetValue()
		for _, run := range fw.runs {
			dir := c.sandboxDir(c.agents[0], fwID, run.execID, run.containerID)
			if !run.completed && run.forked != nil && sameProcess(*run.forked) {
				r.alive[run.containerID], r.aliveDirs[dir] = true, true
				continue
			}
			r.ended[run.containerID] = lastSignOfLife(dir, run, last, now)
		}
	}
	return r
}

// lastSignOfLife dates the end of an executor that did not outlive the
// agent's restart, never after now.
func lastSignOfLife(dir string, run ckRun, agentAlive, now time.Time) time.Time {
	files := []string{filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")}
	for _, t := range run.tasks {
		id := t.info.TaskID.Value
		files = append(files, filepath.Join(dir, "tasks", id, "stdout"), filepath.Join(dir, "tasks", id, "stderr"), t.meta)
	}
	writes := make([]time.Time, 0, len(files))
	for _, f := range files {
		writes = append(writes, modTime(f))
	}
	return latestSign(agentAlive, writes, now)
}

// recover rebuilds the frameworks, executors and tasks of the checkpoint.
// An executor whose process still runs is live again (charged, in its
// cgroup, waiting to re-subscribe); one that is gone ends now, dated when
// it was last seen alive, and its live tasks fail with a message saying
// so. orphans are the sandboxes in which the start killed processes the
// gone executors' tasks left: those tasks ran until now.
func (c *Cluster) recover(r recovery, orphans map[string]int) {
	c.recovering = true
	defer func() { c.recovering = false }()
	for _, cf := range r.frameworks {
		fw := c.recoverFramework(cf.info)
		runs := recoveryOrder(cf.runs, r.alive)
		for _, run := range runs {
			e := c.recoverRun(fw, run)
			switch fateOf(run, r.alive[run.containerID]) {
			case fateReattach:
				if err := c.ten.assign(e); err != nil {
					c.log.Warn("recovered executor's tenant uid unknown: its new tasks' groups stay root's", "executor_id", e.id, "err", err)
				}
				c.iso.attach(e)
				c.recoveredLive++
				c.log.Info("recovered executor", "framework_id", fw.id, "executor_id", e.id, "pid", e.pid,
					"tasks", len(e.liveTasks()))
			case fateEnded:
				c.executorEnded(e, nil, "Executor terminated", modTime(filepath.Join(run.meta, "completed")))
			case fateGone:
				at := goneAt(r.ended[run.containerID], orphans[e.dir] > 0, c.cfg.Clock.Now())
				_ = os.Chtimes(e.dir, at, at) // the sandbox's age counts from its end (GC)
				if n := len(e.liveTasks()); n > 0 {
					c.log.Warn("executor of the earlier run is gone; its tasks fail", "framework_id", fw.id,
						"executor_id", e.id, "last_seen", at, "tasks", n)
				} else {
					c.log.Info("executor of the earlier run has ended", "framework_id", fw.id, "executor_id", e.id, "last_seen", at)
				}
				c.executorEnded(e, nil, "the executor was gone when the "+c.cfg.Process+" restarted", at)
			}
		}
		if !keepRecoveredFramework(len(fw.executors), len(fw.tasks)) {
			delete(c.frameworks, fw.id)
			c.ck.frameworkRemoved(fw.id)
			continue
		}
		if c.cfg.Recover == RecoverReconnect {
			c.awaitFramework(fw)
		}
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// recoverFramework registers a checkpointed framework, disconnected until
// its scheduler subscribes again.
func (m *master) recoverFramework(info mesos.FrameworkInfo) *framework {
	fw := &framework{id: info.GetID().GetValue(), info: info, executors: map[execKey]*executor{}, tasks: map[string]*task{},
		filters: map[string][]*filter{}, offers: map[string]*offer{}}
	m.frameworks[fw.id] = fw
	return fw
}

// recoverRun rebuilds one executor run and its tasks, registered (and
// charged) as live; the caller ends it when its process is gone.
func (c *Cluster) recoverRun(fw *framework, run ckRun) *executor {
	a := c.agents[0]
	e := &executor{fw: fw, agent: a, id: run.execID, info: run.info, containerID: run.containerID,
		resources: normalize(run.info.Resources), tasks: map[string]*task{}, reason: mesos.REASON_EXECUTOR_TERMINATED,
		termState: mesos.TASK_FAILED, done: make(chan struct{}), persisted: persisted{meta: run.meta, ck: c.ck, recovered: true}}
	e.dir = c.sandboxDir(a, fw.id, e.id, e.containerID)
	if run.forked != nil {
		e.pid, e.proc = run.forked.Pid, *run.forked
		var ok bool
		if e.token, ok = parseTokenHash(run.forked.Token); !ok {
			c.log.Warn("executor started by an earlier version without a token: its calls are accepted without one until it exits",
				"executor_id", e.id, "pid", e.pid)
		}
	}
	c.register(e)
	var queued []*task
	group := false
	for _, ct := range run.tasks {
		t, inGroup := c.recoverTask(e, ct)
		if t == nil {
			continue
		}
		if !t.released {
			c.charge(a, t.resources)
		}
		if awaitsLaunch(t.launched, t.state) {
			queued = append(queued, t)
			group = group || inGroup
		}
	}
	if len(queued) > 0 { // sent when it subscribes
		e.queued = []batch{{tasks: queued, group: group}}
	}
	return e
}

// recoverTask replays a task's records: its latest state, the updates not
// yet acknowledged (forwarded again when its framework subscribes) and
// whether the executor has it. A task whose terminal update was
// acknowledged is forgotten.
func (m *master) recoverTask(e *executor, ct ckTask) (t *task, group bool) {
	r := replayTask(ct.info.TaskID, ct.records)
	if r.forget {
		_ = os.Remove(ct.meta) // done before the restart
		return nil, false
	}
	t = &task{info: ct.info, fw: e.fw, exec: e, seq: m.nextID(), state: r.state, status: r.status,
		resources: normalize(ct.info.Resources), acked: r.acked, pending: r.pending, launched: r.launched,
		released: r.released}
	e.fw.tasks[t.info.TaskID.Value] = t
	e.tasks[t.info.TaskID.Value] = t
	return t, r.group
}

// watchRecovered follows the recovered executors once the agent serves:
// their processes' ends, and their re-registration, which must come
// within ExecutorReregistrationTimeout; with Recover = cleanup they are
// shut down instead.
func (c *Cluster) watchRecovered() {
	for _, e := range c.agents[0].liveExecutors() {
		if !e.recovered {
			continue
		}
		e.unwatch = watchExit(e.proc, func() { c.recoveredExited(e) })
		if c.cfg.Recover == RecoverCleanup {
			c.cleanupExecutor(e)
			continue
		}
		c.after(e, c.cfg.ExecutorReregistrationTimeout, func() { c.reregistrationTimeout(e) })
	}
}

// recoveredExited handles the end of a recovered executor's process (not
// a child of this one: its exit status is unknown).
func (c *Cluster) recoveredExited(e *executor) {
	c.mu.Lock()
	e.exited = true
	gone := e.state == execTerminated || e.detached
	msg := e.exitMessage
	c.mu.Unlock()
	if gone {
		return
	}
	if msg == "" {
		msg = "Executor terminated: exit status unknown (it was recovered from an earlier run of the " + c.cfg.Process + ")"
	}
	msg = c.destroyContainer(e, msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.executorTerminated(e, nil, msg)
}

// reregistrationTimeout kills a recovered executor that has not
// subscribed again: its tasks are lost (Mesos semantics).
func (h *host) reregistrationTimeout(e *executor) {
	if e.state != execLaunching {
		return
	}
	h.log.Warn("recovered executor did not re-register in time; killing it", "executor_id", e.id,
		"timeout", h.cfg.ExecutorReregistrationTimeout)
	e.state = execTerminating
	e.reason = mesos.REASON_EXECUTOR_REREGISTRATION_TIMEOUT
	e.termState = lossState(e.fw.partitionAware(), lossGone)
	e.exitMessage = "Executor did not reregister within " + mesosDuration(h.cfg.ExecutorReregistrationTimeout)
	h.kill9(e)
}

// cleanupExecutor shuts down a recovered executor (Recover = cleanup):
// SIGTERM, so that it kills its tasks and reports them when it subscribes,
// then SIGKILL after its shutdown grace period.
func (h *host) cleanupExecutor(e *executor) {
	e.state = execTerminating
	e.exitMessage = "Executor terminated: stopped by the " + h.cfg.Process + " started with recover=cleanup"
	e.signalGroup(syscall.SIGTERM)
	h.after(e, e.gracePeriod(h.cfg.ExecutorShutdownGrace)+termGrace, func() { h.kill9(e) })
}

// kill9 kills an executor's process group and whatever is in its
// container; its watcher then reports its end.
func (h *host) kill9(e *executor) {
	e.signalGroup(syscall.SIGKILL)
	if g := e.cgroup; g != nil {
		go func() { _, _ = g.Kill(destroyTimeout) }()
	}
}

// detach leaves a live executor running as the agent stops: its timers
// and connection end, its process and checkpoint stay for the next run.
func (h *host) detach(e *executor) {
	e.detached = true
	e.disconnect()
}

// leaveRunning reports whether Close leaves e running: an executor of a
// checkpointing framework that has subscribed (in this run or an earlier
// one) and that nothing asked to stop. One that never subscribed runs no
// task yet, and nothing would bound its life: it is shut down, and its
// queued tasks fail.
func (h *host) leaveRunning(e *executor) bool {
	return keepOnClose(e.ck != nil, e.pid != 0, e.state, e.recovered, h.cfg.Recover)
}

// cleanedUp closes Cleaned once, with Recover = cleanup, no executor is
// left.
func (h *host) cleanedUp() {
	if h.cfg.Recover != RecoverCleanup || h.recovering || len(h.live) > 0 {
		return
	}
	h.closeCleaned()
}

// Cleaned is closed, when Config.Recover is cleanup, once every executor
// the earlier run left has ended (at once when there was none).
func (c *Cluster) Cleaned() <-chan struct{} { return c.cleaned }

// Recovered is how many executors of an earlier run the start found
// still running.
func (c *Cluster) Recovered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recoveredLive
}

package scheduler

import (
	"context"
	"errors"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// daemonReport marks a daemon task busy (BEGIN) or idle (COMPLETE), hands
// the run to the observers, and counts a completed run for its job. Only
// the executor that runs the task (executorID, as the engine authenticated
// the sender) reports for it: a report names its task in its data, which
// an executor of another app or namespace could fill with that task's id
// (visible in the host's cgroup names) to mark it busy, notify its
// failures or pause its job.
func (h *statusHandler) daemonReport(ctx context.Context, reg *registry.Registry, agentID, executorID string, rep jobs.DaemonReport) {
	tid, _ := jobs.ParseTaskID(rep.TaskID)
	running, err := h.st.runningOf(ctx, reg, tid.JobName)
	if err != nil {
		h.log.Warn("daemon report: read running task", "task", rep.TaskID, "err", err)
		return
	}
	rt, ok := running[tid.Item]
	current := ok && rt.TaskID == rep.TaskID
	if !current {
		// The old task of an overlapping move still runs the job's cron until its
		// replacement runs: its runs count as any of the shard's (overlap.go).
		retiring, err := h.st.retiringAll(ctx, reg)
		if err != nil {
			h.log.Warn("daemon report: read retiring tasks", "task", rep.TaskID, "err", err)
			return
		}
		r, ok := retiring[tid.JobName][tid.Item]
		if !ok || r.TaskID != rep.TaskID {
			return // a report of a task that is no longer current
		}
		rt = r.Entry
	}
	if executorID != "" && rt.ExecutorID != "" && executorID != rt.ExecutorID {
		h.log.Warn("daemon report from an executor that does not run its task: ignored", "task", rep.TaskID,
			"executor", executorID, "task_executor", rt.ExecutorID, "agent", agentID)
		return
	}
	if current && rt.Busy != (rep.Type == jobs.DaemonBegin) {
		rt.Busy = rep.Type == jobs.DaemonBegin
		rt.UpdatedAt = h.clock.Now().UTC()
		if err := h.mark(ctx, reg, tid, rt); err != nil {
			h.log.Warn("daemon report: mark busy/idle", "task", rep.TaskID, "err", err)
		}
	}
	job, _ := h.catalog.Job(tid.JobName)
	ev := observe.TaskEvent{TaskID: rep.TaskID, Job: tid.JobName, App: job.AppName, AgentID: agentID, Hostname: rt.Hostname,
		Item: tid.Item, Source: string(rep.ExecutionSource), At: h.clock.Now()}
	if d, ok := h.obs.(observe.Daemons); ok {
		d.DaemonRun(ev, rep)
	}
	if rep.Type != jobs.DaemonComplete {
		return
	}
	if !rep.Success {
		h.notifyFailure(job, ev, engine.Status{TaskID: rep.TaskID, AgentID: agentID, State: "DAEMON_RUN_FAILED", Message: rep.Message})
	}
	h.daemonRunEnded(ctx, reg, job, ev, rep)
}

// daemonRunEnded counts one run a DAEMON shard reported.
func (h *statusHandler) daemonRunEnded(ctx context.Context, reg *registry.Registry, job jobs.Config, ev observe.TaskEvent, rep jobs.DaemonReport) {
	res := task.Success
	if !rep.Success {
		res = task.Failure
	}
	_, _, runnable := h.catalog.Runnable(job.JobName)
	ch := reg.Change()
	p, err := h.countRun(ctx, reg, ch, job, res, rep.Message, true, runnable)
	if err == nil {
		err = ch.Commit(ctx)
	}
	if err != nil && !errors.Is(err, registry.ErrConflict) {
		h.log.Warn("daemon run: count failures", "job", job.JobName, "err", err)
		return
	}
	if err == nil && p != nil {
		h.paused(job, ev, *p)
	}
}

// countRun folds a DAEMON run's result into its job's run state (in ch),
// and returns the pause it decided, if any.
func (h *statusHandler) countRun(ctx context.Context, reg *registry.Registry, ch *registry.Change, job jobs.Config, res task.Result, cause string, ended, runnable bool) (*task.Pause, error) {
	rs, err := reg.Work().RunStateOf(ctx, job.JobName)
	if err != nil {
		return nil, err
	}
	next, pause, changed := task.CountRun(rs, res, cause, ended, job.PauseAfterFailures, runnable, h.clock.Now())
	if changed {
		ch.CountRun(job.JobName, next)
	}
	if pause != nil {
		ch.Pause(job.JobName, *pause)
	}
	return pause, nil
}

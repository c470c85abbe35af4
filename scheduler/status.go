package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// statusHandler applies status updates: it reads what task.Transition
// needs (the shard's running entry, its job, the run's other shards),
// calls it, and commits the outcome (see README.md in this folder for the
// state machine). It returns an error only when the change could not be
// committed, so the update is not acknowledged and the engine resends it.
type statusHandler struct {
	driver   engine.Driver
	clock    clock.Clock
	log      *slog.Logger
	obs      observe.Tasks
	notifier observe.Notifier
	st       *state
	catalog  *Catalog
	queues   *queues
	answered func(taskID string) // the reconciler's
	runs     *durations
	replaced map[string]bool // the original's DAEMON tasks killed this term (upgrade.go)
}

// handle applies one update through reg (the registry, or a batch whose
// reads see the batch's earlier writes): one read of everything the
// update's decision looks at, one pure decision (task.Transition), one
// commit of its outcome.
func (h *statusHandler) handle(ctx context.Context, reg *registry.Registry, st engine.Status) error {
	tid, err := jobs.ParseTaskID(st.TaskID)
	if err != nil {
		h.log.Warn("status: foreign task id", "task", st.TaskID, "state", st.State)
		return nil
	}
	in, err := h.read(ctx, reg, tid, st)
	if err != nil {
		return err
	}
	if in.Entry == nil {
		if ok, err := h.retiringUpdate(ctx, reg, tid, st); ok || err != nil {
			return err // the old task of a DAEMON shard's overlapping move (overlap.go)
		}
	}
	out := task.Transition(in)
	if out.Message != "" {
		st.Message = out.Message // history says who killed it
	}
	return h.commit(ctx, reg, tid, in, st, out)
}

// read gathers what the transition looks at: the shard's running entry,
// its job and, at a task's end, the run's other shards, its keyed run's
// record and its job's run state.
func (h *statusHandler) read(ctx context.Context, reg *registry.Registry, tid jobs.TaskID, st engine.Status) (task.Input, error) {
	running, err := h.st.runningOf(ctx, reg, tid.JobName)
	if err != nil {
		return task.Input{}, err
	}
	h.answered(st.TaskID)
	job, exists := h.catalog.Job(tid.JobName)
	_, _, runnable := h.catalog.Runnable(tid.JobName)
	in := task.Input{
		Update: task.Update{TaskID: st.TaskID, State: st.State, Reason: st.Reason, Source: st.Source, Message: st.Message},
		Job: task.Job{Name: tid.JobName, Exists: exists, Runnable: runnable, Daemon: job.JobExecutionType == jobs.Daemon, Failover: job.Failover,
			MaxRetries: job.MaxRetries, RetryBackoff: time.Duration(job.RetryBackoffSeconds) * time.Second, PauseAfterFailures: job.PauseAfterFailures},
		Overtaken: h.st.overtaken.Has(st.TaskID),
		Now:       h.clock.Now(),
		Item:      tid.Item,
	}
	rt, ok := running[tid.Item]
	if !ok || rt.TaskID != st.TaskID {
		if st.State.Live() {
			in.Relaunching = relaunching(ctx, reg, tid, st.TaskID)
		}
		return in, nil
	}
	in.Entry = &rt
	if !in.Update.State.Terminal() {
		return in, nil // the run's other shards matter only at a task's end
	}
	for item, o := range running {
		if item != tid.Item {
			in.OthersRunning = true
			in.RunPending = in.RunPending || (rt.RunKey != "" && o.RunKey == rt.RunKey)
		}
	}
	fs, err := reg.Work().FailoverOf(ctx, tid.JobName)
	if err != nil {
		return in, err
	}
	for _, f := range fs {
		in.RetryPending = in.RetryPending || f.Retry
		in.RunPending = in.RunPending || (rt.RunKey != "" && f.RunKey == rt.RunKey && f.Item != tid.Item)
	}
	if key := rt.RunKey; key != "" {
		rec, err := reg.Work().RunRecordOf(ctx, key)
		if err != nil && !errors.Is(err, registry.ErrRunNotFound) && !errors.Is(err, registry.ErrDamaged) {
			return in, err // (a record that does not decode is set aside and written anew)
		}
		in.Record = rec
	}
	if exists { // a deregistered job's runs are not counted
		if in.Runs, err = reg.Work().RunStateOf(ctx, tid.JobName); err != nil {
			return in, err
		}
	}
	rep := shardReportOf(st.Data)
	in.Report = task.Report{StartedAt: rep.StartTime, EndedAt: rep.CompleteTime, Outputs: rep.Outputs}
	return in, nil
}

// commit carries out the transition's outcome: the observers hear of the
// update, and the entry's mark or the task's end is committed.
func (h *statusHandler) commit(ctx context.Context, reg *registry.Registry, tid jobs.TaskID, in task.Input, st engine.Status, out task.Outcome) error {
	h.replaceOriginalDaemon(ctx, in, st)
	if out.Stale {
		if h.givenUpUpdate(tid, st) {
			return nil
		}
		h.stale(ctx, st, out)
		return nil
	}
	rt := *in.Entry
	job, _ := h.catalog.Job(tid.JobName)
	ev := observe.TaskEvent{TaskID: st.TaskID, Job: tid.JobName, App: job.AppName, AgentID: st.AgentID, Hostname: rt.Hostname,
		Item: tid.Item, Source: rt.Source, Trigger: rt.Trigger, Transient: job.JobExecutionType != jobs.Daemon, At: h.clock.Now(), Nominal: rt.Nominal}
	if rt.KilledBy == task.KilledByDaemonDeletion {
		ev.Transient = false // the job is gone from the catalog: its kind is the mark's
	}
	if f := h.st.accepting[st.TaskID]; f != nil && !f.told {
		// An update before its ACCEPT's answer (sent off the loop: launcher.acceptLater):
		// the engine has the task, and the observers hear of its launch first.
		f.told = true
		launched := f.ev
		launched.At = h.clock.Now()
		h.obs.Launched(launched)
	}
	h.obs.StatusChanged(ev, st)
	delete(h.st.unreachable, st.TaskID)
	delete(h.st.lostCluster, st.TaskID)
	if out.Unreachable {
		h.st.unreachable[st.TaskID] = unreachableSince(st, h.clock.Now())
		if st.LostCluster != "" {
			h.st.lostCluster[st.TaskID] = st.LostCluster
		}
	}
	if out.Overtaken {
		h.st.overtaken.Add(st.TaskID)
	}
	if rt.KilledBy != "" && out.End == nil && st.State != task.Killing {
		// The run was stopped and the engine still runs the task: its kill did not get
		// there (sent while the engine was out of reach, or held for an ACCEPT whose
		// leader's term ended first). Asked again at each of its updates, the
		// reconciliations' answers among them, until it ends.
		h.log.Info("status: a stopped run's task still runs; killing it again", "task", st.TaskID, "state", st.State, "by", rt.KilledBy)
		if err := killTask(ctx, h.st, h.driver, st.TaskID, st.AgentID); err != nil {
			h.log.Warn("status: kill a stopped run's task again", "task", st.TaskID, "err", err)
		}
	}
	switch {
	case out.Mark != nil:
		err := h.mark(ctx, reg, tid, *out.Mark)
		if err == nil && out.Mark.State == task.Running && in.Job.Daemon {
			h.replacementRuns(ctx, reg, tid, st.TaskID)
		}
		return err
	case out.End != nil:
		return h.end(ctx, reg, tid, job, ev, st, *out.End, in)
	}
	return nil
}

// stale handles an update for a task that is not the shard's current
// one: an orphan that may still run is killed.
func (h *statusHandler) stale(ctx context.Context, st engine.Status, out task.Outcome) {
	if out.Forget {
		h.st.overtaken.Remove(st.TaskID) // the engine's own stream for it has ended
	}
	if out.Reconcile { // a refused launch of a running task, or its only one: the engine says which
		h.log.Info("status: launch refused, asking the engine for the task's state", "task", st.TaskID, "state", st.State, "message", st.Message)
		if err := h.driver.Reconcile(ctx, []engine.TaskRef{{TaskID: st.TaskID, AgentID: st.AgentID}}); err != nil {
			h.log.Warn("status: reconcile a refused launch", "task", st.TaskID, "err", err)
		}
	}
	if task.DuplicateLaunch(task.Update{State: st.State, Reason: st.Reason, Source: st.Source, Message: st.Message}) {
		h.log.Info("status: the engine refused a second launch of a running task", "task", st.TaskID)
	}
	if out.Kill {
		h.log.Warn("status: killing a task the registry does not know", "task", st.TaskID, "state", st.State)
		if err := killTask(ctx, h.st, h.driver, st.TaskID, st.AgentID); err != nil {
			h.log.Warn("status: kill orphan", "task", st.TaskID, "err", err)
		}
	}
}

// mark records a running task's new state.
func (h *statusHandler) mark(ctx context.Context, reg *registry.Registry, tid jobs.TaskID, e task.Entry) error {
	err := reg.Change().Mark(tid.JobName, tid.Item, e).Commit(ctx)
	if errors.Is(err, registry.ErrConflict) {
		h.st.reloadRunning() // someone else wrote it: read again
		return nil
	}
	if err == nil {
		e.Version++
		h.st.putRunning(tid.JobName, tid.Item, e)
	}
	return err
}

// end commits a task's end: its running entry removed, with its retry or
// failover entry, its keyed run's record and its job's run state, in one
// commit; then a killed daemon is queued again and a failure notified.
func (h *statusHandler) end(ctx context.Context, reg *registry.Registry, tid jobs.TaskID, job jobs.Config, ev observe.TaskEvent, st engine.Status, e task.End, in task.Input) error {
	ch := reg.Change()
	if e.Retry != nil {
		ch.FailOver(tid.JobName, tid.Item, *e.Retry)
	}
	if e.Record != nil {
		ch.RecordRun(e.Entry.RunKey, *e.Record)
	}
	if e.Runs != nil {
		ch.CountRun(job.JobName, *e.Runs)
	}
	if e.Pause != nil {
		ch.Pause(job.JobName, *e.Pause)
	}
	h.log.Debug("task ended", "task", st.TaskID, "state", st.State, "result", e.Result, "again", e.Retry != nil)
	err := ch.End(tid.JobName, tid.Item, e.Entry.Version).Commit(ctx)
	if errors.Is(err, registry.ErrConflict) {
		h.st.reloadRunning()
		return nil
	}
	if err != nil {
		return err
	}
	h.st.dropRunning(tid.JobName, tid.Item)
	if st.State == task.Finished && in.Job.Exists {
		h.runs.add(tid.JobName, ranFor(shardReportOf(st.Data), e.Entry.LaunchedAt, in.Now))
	}
	if e.Pause != nil {
		h.paused(job, ev, *e.Pause)
	}
	if e.RequeueDaemon {
		if _, err := reg.Work().TriggerBy(ctx, job.JobName, false, in.Now, registry.ByDaemon); err != nil {
			h.log.Error("status: re-queue daemon", "job", job.JobName, "err", err)
		}
		h.queues.changed()
	}
	if e.Notify {
		if st.State.Failure() {
			h.log.Info("task failed", "task", st.TaskID, "state", st.State, "reason", st.Reason, "message", st.Message, "relaunch", e.Retry != nil)
		}
		if lostOriginal(e.Entry, st) {
			h.log.Info("a task the original left running is gone: recorded, not alerted", "task", st.TaskID, "state", st.State)
			return nil
		}
		h.notifyFailure(job, ev, st)
	}
	return nil
}

// lostOriginal reports the loss of a task the original ElasticJob-Cloud left running
// (registry.LeftByOriginal), answered gone or unknown by the engine, mostly at the first
// reconciliation after an upgrade (another cluster, mesos-local, a task that ended while no
// scheduler listened): recorded as any end, but no failure alert, which would reach the
// on-call for every such shard at once for tasks the old scheduler ran. A failure the task
// itself reports (TASK_FAILED, TASK_ERROR) is alerted as any other.
func lostOriginal(e task.Entry, st engine.Status) bool {
	if !registry.LeftByOriginal(e) {
		return false
	}
	switch st.State {
	case task.Lost, task.Gone, task.GoneByOperator, task.Unknown, task.Dropped:
		return true
	}
	return false
}

// paused logs a pause and posts it to the job's webhook, if it has one.
func (h *statusHandler) paused(job jobs.Config, ev observe.TaskEvent, p task.Pause) {
	h.log.Warn("job paused", "job", job.JobName, "failedRuns", p.FailedRuns, "cause", p.Cause)
	u := job.Props["webhook.url"]
	if h.notifier == nil || !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
		return
	}
	ev.At = p.At
	h.notifier.Notify(job, ev, engine.Status{TaskID: ev.TaskID, AgentID: ev.AgentID, State: "JOB_PAUSED", Message: p.Reason})
}

func (h *statusHandler) notifyFailure(job jobs.Config, ev observe.TaskEvent, st engine.Status) {
	if h.notifier != nil && job.JobErrorHandlerType == jobs.HandlerWebhook {
		h.notifier.Notify(job, ev, st)
	}
}

// relaunching reports whether task id (of no running entry) is a launch
// rolled back after a failed ACCEPT that waits in its queue to launch
// again under the same id (queue.Relaunch). A queue that cannot be read
// says no (the orphan is killed, as any other).
func relaunching(ctx context.Context, reg *registry.Registry, tid jobs.TaskID, id string) bool {
	if tid.Kind == jobs.KindFailover {
		fs, err := reg.Work().FailoverOf(ctx, tid.JobName)
		return err == nil && slices.ContainsFunc(fs, func(f queue.Failover) bool { return f.Item == tid.Item && f.Relaunch == id })
	}
	rd, ok, err := reg.Work().ReadyOf(ctx, tid.JobName)
	return err == nil && ok && rd.Relaunched(tid.Item) == id
}

// unreachableSince is when a task went unreachable: when the engine says
// its agent was lost (so a new leader, whose reconciliation is answered
// TASK_UNREACHABLE again, does not start the task_unreachable_timeout
// over: with leaders changing, a task would otherwise never be counted
// lost), else now.
func unreachableSince(st engine.Status, now time.Time) time.Time {
	if s := st.UnreachableSince; !s.IsZero() && s.Before(now) {
		return s
	}
	return now
}

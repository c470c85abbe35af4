package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// A DAEMON job with moveOverlapSeconds moves a shard to another cluster by starting it
// there first (docs/clusters.md):
//
//  1. startOverlap: the shard's running entry becomes a retiring record
//     (registry.Retiring, its own root) and the job is queued again, in one commit; the
//     old task runs on. Every reader of the running entries sees one task for the shard:
//     the new one once it is launched, none before.
//  2. The round launches the shard on a cluster that takes it, as any DAEMON relaunch.
//  3. When the new task reports RUNNING (statusHandler.commit, or the next round's
//     sweepRetiring, which also covers a new term that finds both), the retiring task
//     is killed; its end removes the record (statusHandler.retiringUpdate), recorded in
//     history as any task's end, with no requeue and no run counted.
//  4. When the new task does not run by the record's StartBy (it never found room, or it
//     keeps failing to start), giveUpOverlap makes the old task the running entry again,
//     kills the new one, and the move is tried again one overlap later.

// retireAgain is how long after asking to kill a retiring task the kill is asked again
// while the task is still reported (a kill the engine lost). A task whose agent or
// cluster is unreachable is not asked: the unreachable bound counts it lost.
const retireAgain = time.Minute

// startOverlap begins a declared overlap for shard item of job, whose task e runs on a
// cluster the job no longer runs on (or a drained one). A shard it does not move now is
// left be this round.
func (l *launcher) startOverlap(ctx context.Context, now time.Time, job string, item int, e task.Entry, cfg jobs.Config, cluster string, drained bool) {
	if e.State != task.Running {
		return // a task still starting moves once it runs
	}
	if at, ok := l.overlapRetry[e.TaskID]; ok && now.Before(at) {
		return // its last overlap was given up: tried again later
	}
	retiring, err := l.st.retiringAll(ctx, l.reg)
	if err != nil {
		l.log.Warn("move a DAEMON shard: read the retiring tasks", "job", job, "err", err)
		return
	}
	if _, busy := retiring[job][item]; busy {
		return // the shard is in an overlap already (this task is its replacement)
	}
	startBy := now.Add(time.Duration(cfg.MoveOverlapSeconds) * time.Second)
	ch := l.reg.Change()
	if err := ch.Retire(ctx, job, item, e, now, startBy); err != nil {
		l.log.Warn("move a DAEMON shard with an overlap: queue its replacement", "job", job, "item", item, "err", err)
		return
	}
	if err := ch.Commit(ctx); err != nil {
		if errors.Is(err, registry.ErrConflict) {
			l.st.reloadRunning()
		}
		l.log.Warn("move a DAEMON shard with an overlap", "job", job, "item", item, "task", e.TaskID, "err", err)
		return
	}
	l.st.dropRunning(job, item)
	l.st.retiring = nil // read again with the record's version
	l.alarm.set(startBy)
	l.queues.changed()
	l.wake()
	l.log.Info("moving a DAEMON shard with a declared overlap: starting it on another cluster before stopping it",
		"job", job, "item", item, "task", e.TaskID, "cluster", cluster, "drained", drained, "start_by", startBy)
}

// sweepRetiring ends the overlaps whose time has come: a retiring task whose
// replacement runs is killed, one whose replacement has not run by its StartBy is the
// shard's running task again; a retiring task of a job that is gone is killed.
func (l *launcher) sweepRetiring(ctx context.Context, v round.View) {
	all, err := l.st.retiringAll(ctx, l.reg)
	if err != nil {
		l.log.Warn("read the retiring tasks", "err", err)
		return
	}
	for job, items := range all {
		_, exists := l.catalog.Job(job)
		for item, r := range items {
			cur, has := v.Running[job][item]
			switch {
			case !exists:
				killRetiring(ctx, l.driver, l.log, l.st, l.clock.Now(), r, "its job is gone")
			case has && cur.TaskID != r.TaskID && cur.State == task.Running:
				killRetiring(ctx, l.driver, l.log, l.st, l.clock.Now(), r, "its replacement runs")
			case !v.Now.Before(r.StartBy):
				if _, asked := l.st.retireKilled[r.TaskID]; !asked {
					l.giveUpOverlap(ctx, v, job, item, r, cur, has)
				}
			default:
				l.alarm.set(r.StartBy)
			}
		}
	}
}

// giveUpOverlap ends an overlap whose new task did not run in time: the retiring task
// is the shard's running entry again (over the new one's, if it was launched), the new
// one's retry (if it failed) is dropped, and so is the job's ready entry when every
// shard runs again; then the new task, if any, is killed. The move is tried again an
// overlap later (l.overlapRetry).
func (l *launcher) giveUpOverlap(ctx context.Context, v round.View, job string, item int, r registry.Retiring, cur task.Entry, has bool) {
	now := v.Now
	var replaced *task.Entry
	if has {
		replaced = &cur
	}
	ch := l.reg.Change().Reinstate(job, item, r, replaced).DropFailover(job, item)
	cfg, _ := l.catalog.Job(job)
	n := len(v.Running[job])
	if !has {
		n++
	}
	if n >= cfg.ShardingTotalCount {
		ch.DropReady(job) // every shard runs again: nothing is left to launch
	}
	if err := ch.Commit(ctx); err != nil {
		l.st.reloadRunning()
		l.log.Warn("give up a DAEMON shard's overlapping move", "job", job, "item", item, "err", err)
		return
	}
	// The round under way sees the old task as the shard's again, so it launches no
	// second replacement (its view's running map is the mirror, dropped here: the next
	// view reads the entries again, with their versions).
	if v.Running != nil {
		if v.Running[job] == nil {
			v.Running[job] = map[int]task.Entry{}
		}
		e := r.Entry
		e.Version = 0
		v.Running[job][item] = e
	}
	l.st.reloadRunning()
	l.queues.changed()
	bound := time.Duration(cfg.MoveOverlapSeconds) * time.Second
	if bound <= 0 {
		bound = time.Duration(jobs.MaxMoveOverlapSeconds) * time.Second
	}
	l.overlapRetry[r.TaskID] = now.Add(bound)
	l.alarm.set(now.Add(bound))
	attrs := []any{"job", job, "item", item, "task", r.TaskID, "since", r.Since, "start_by", r.StartBy, "retry_at", now.Add(bound)}
	if has {
		l.st.givenUp[cur.TaskID] = true
		attrs = append(attrs, "new_task", cur.TaskID, "new_state", cur.State)
		if err := killTask(ctx, l.st, l.driver, cur.TaskID, cur.AgentID); err != nil {
			l.log.Warn("stop the new task of a given-up overlap", "task", cur.TaskID, "err", err)
		}
	}
	l.log.Warn("a DAEMON shard's replacement did not run within the job's moveOverlapSeconds: the old task runs on, the move is tried again later", attrs...)
}

// killRetiring asks the engine to kill a retiring task, once, and again only after
// retireAgain while it is still reported; not while it is unreachable.
func killRetiring(ctx context.Context, driver engine.Driver, log *slog.Logger, st *state, now time.Time, r registry.Retiring, why string) {
	if at, asked := st.retireKilled[r.TaskID]; asked && now.Sub(at) < retireAgain {
		return
	}
	if _, away := st.unreachable[r.TaskID]; away {
		return
	}
	st.retireKilled[r.TaskID] = now
	log.Info("stopping a retiring DAEMON task: "+why, "task", r.TaskID, "agent", r.AgentID, "cluster", engine.ClusterOf(r.AgentID))
	if err := killTask(ctx, st, driver, r.TaskID, r.AgentID); err != nil {
		log.Warn("stop a retiring DAEMON task", "task", r.TaskID, "err", err)
	}
}

// replacementRuns kills the shard's retiring task, if it has one, once its replacement
// (taskID) reports RUNNING.
func (h *statusHandler) replacementRuns(ctx context.Context, reg *registry.Registry, tid jobs.TaskID, taskID string) {
	all, err := h.st.retiringAll(ctx, reg)
	if err != nil {
		h.log.Warn("read the retiring tasks", "err", err)
		return
	}
	if r, ok := all[tid.JobName][tid.Item]; ok && r.TaskID != taskID {
		killRetiring(ctx, h.driver, h.log, h.st, h.clock.Now(), r, "its replacement runs")
	}
}

// retiringUpdate applies an update of a retiring task (ok false: the task is not one).
// Its end removes the record and is told to the observers (history records it as any
// task's end); nothing is queued, retried or counted, since the shard runs on in its
// replacement. Its unreachability starts the unreachable bound, as a running task's
// does, so a retiring task on a lost cluster is counted lost once and its record goes:
// back, it is a task the registry does not know, killed once.
func (h *statusHandler) retiringUpdate(ctx context.Context, reg *registry.Registry, tid jobs.TaskID, st engine.Status) (bool, error) {
	all, err := h.st.retiringAll(ctx, reg)
	if err != nil {
		return false, err
	}
	r, ok := all[tid.JobName][tid.Item]
	if !ok || r.TaskID != st.TaskID {
		return false, nil
	}
	delete(h.st.unreachable, st.TaskID)
	delete(h.st.lostCluster, st.TaskID)
	if st.State == task.Unreachable {
		h.st.unreachable[st.TaskID] = unreachableSince(st, h.clock.Now())
		if st.LostCluster != "" {
			h.st.lostCluster[st.TaskID] = st.LostCluster
		}
	}
	if !st.State.Terminal() {
		return true, nil
	}
	err = reg.Change().Retired(tid.JobName, tid.Item, r.Version).Commit(ctx)
	if errors.Is(err, registry.ErrConflict) {
		h.st.reloadRunning()
		return true, nil
	}
	if err != nil {
		return true, err
	}
	h.st.dropRetiring(tid.JobName, tid.Item)
	if _, asked := h.st.retireKilled[st.TaskID]; asked && st.State == task.Killed {
		st.Message = task.KilledMessage("the scheduler: its replacement started on another cluster (moveOverlapSeconds)", st.Message)
	}
	delete(h.st.retireKilled, st.TaskID)
	job, _ := h.catalog.Job(tid.JobName)
	h.obs.StatusChanged(observe.TaskEvent{TaskID: st.TaskID, Job: tid.JobName, App: job.AppName, AgentID: st.AgentID, Hostname: r.Hostname,
		Item: tid.Item, Source: r.Source, Trigger: r.Trigger, At: h.clock.Now(), Nominal: r.Nominal}, st)
	h.log.Info("a retiring DAEMON task ended", "task", st.TaskID, "state", st.State, "retiring_since", r.Since)
	return true, nil
}

// givenUpUpdate tells the observers of the end of a task whose overlap was given up
// (giveUpOverlap killed it; its shard's entry is the old task again), so its end is
// recorded; it reports whether the update is one. A live update of such a task is an
// orphan's, killed again: the first kill may not have reached it (it was unreachable).
func (h *statusHandler) givenUpUpdate(tid jobs.TaskID, st engine.Status) bool {
	if !h.st.givenUp[st.TaskID] || !st.State.Terminal() {
		return false
	}
	delete(h.st.givenUp, st.TaskID)
	job, _ := h.catalog.Job(tid.JobName)
	if st.State == task.Killed {
		st.Message = task.KilledMessage("the scheduler: it did not run within the job's moveOverlapSeconds; the task it was to replace runs on", st.Message)
	}
	h.obs.StatusChanged(observe.TaskEvent{TaskID: st.TaskID, Job: tid.JobName, App: job.AppName, AgentID: st.AgentID,
		Item: tid.Item, At: h.clock.Now()}, st)
	return true
}

package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// Mesos task states, by how the status handler treats them.
var (
	activeStates = map[string]bool{"TASK_STAGING": true, "TASK_STARTING": true, "TASK_RUNNING": true, "TASK_KILLING": true}
	// failedStates end a task with a failure that failover may retry.
	failedStates = map[string]bool{"TASK_FAILED": true, "TASK_LOST": true, "TASK_ERROR": true, "TASK_DROPPED": true,
		"TASK_GONE": true, "TASK_GONE_BY_OPERATOR": true, "TASK_UNKNOWN": true}
)

// IsTerminal reports whether a Mesos state ends a task.
func IsTerminal(state string) bool {
	return state == "TASK_FINISHED" || state == "TASK_KILLED" || failedStates[state]
}

// onStatus applies one status update (see README.md in this folder for the
// state machine). It returns an error only when the state change could not
// be committed, so the update is not acknowledged and Mesos resends it.
func (s *Scheduler) onStatus(ctx context.Context, st mesos.Status) error {
	tid, err := jobs.ParseTaskID(st.TaskID)
	if err != nil {
		s.Log.Warn("status: foreign task id", "task", st.TaskID, "state", st.State)
		return nil
	}
	running, err := s.runningOf(ctx, tid.JobName)
	if err != nil {
		return err
	}
	s.reconciled(st.TaskID)
	rt, ok := running[tid.Item]
	current := ok && rt.TaskID == st.TaskID
	job, jobExists := s.catalog.Job(tid.JobName)
	ev := TaskEvent{TaskID: st.TaskID, Job: tid.JobName, App: job.AppName, AgentID: st.AgentID, Hostname: rt.Hostname,
		Item: tid.Item, Source: rt.Source, Transient: job.JobExecutionType != jobs.Daemon, At: s.Clock.Now()}
	if !current {
		return s.orphan(ctx, st)
	}
	s.Observer.StatusChanged(ev, st)
	delete(s.unreachable, st.TaskID)
	if st.Reason == reasonReconciliation && gone[st.State] {
		s.overtaken.add(st.TaskID)
	}
	switch {
	case activeStates[st.State]:
		return s.markState(ctx, tid, rt, st.State)
	case st.State == "TASK_UNREACHABLE":
		s.unreachable[st.TaskID] = s.Clock.Now()
		return s.markState(ctx, tid, rt, st.State)
	case st.State == "TASK_FINISHED":
		return s.end(ctx, job, ev, rt, st, false, nil)
	case st.State == "TASK_KILLED":
		return s.end(ctx, job, ev, rt, st, false, s.requeueDaemon(ctx, job, jobExists))
	case failedStates[st.State]:
		var extra []store.Op
		f, retry := s.retryOf(job, rt, st)
		if retry {
			extra = append(extra, registry.PutFailoverOp(tid.JobName, tid.Item, f))
		}
		s.Log.Info("task failed", "task", st.TaskID, "state", st.State, "reason", st.Reason, "message", st.Message, "relaunch", len(extra) > 0)
		if err := s.end(ctx, job, ev, rt, st, retry && f.Retry, extra); err != nil {
			return err
		}
		s.notifyFailure(job, ev, st)
		return nil
	}
	s.Log.Warn("status: unhandled state", "task", st.TaskID, "state", st.State)
	return nil
}

// maxNeverStartedRetries bounds how often a shard whose task never started
// is launched again without the job's failover flag.
const maxNeverStartedRetries = 3

// neverStarted reports a task that failed before the executor began it,
// e.g. because its executor exited just as the task arrived: its last
// state is still STAGING and the failure comes from the agent or the
// master, not from the executor (which sends STARTING only when it is
// slow to start a task, so its own failure of a STAGING task may be one of
// the job's), or from an executor refusing it while shutting down
// (REASON_EXECUTOR_TERMINATED). Running it again cannot run the job twice,
// so it is queued like a failover even when the job's failover flag is
// off. TASK_ERROR (an invalid task) is not retried.
func neverStarted(rt registry.Running, st mesos.Status) bool {
	refused := st.Source != "SOURCE_EXECUTOR" || st.Reason == reasonExecutorTerminated
	return rt.State == "TASK_STAGING" && refused && st.State != "TASK_ERROR" && rt.Attempts < maxNeverStartedRetries
}

// maxFailoverBackoff bounds the delay between repeated failovers of a shard.
const maxFailoverBackoff = time.Minute

// retryOf decides whether a failed shard runs again and when:
//   - a task that never started: at once, at most maxNeverStartedRetries times;
//   - maxRetries not used up: after retryBackoffSeconds × 2^(attempt-1);
//   - failover=true or a DAEMON job: at once the first time, then with a
//     backoff doubling from 1 s up to maxFailoverBackoff, so a job that
//     always fails cannot spin.
func (s *Scheduler) retryOf(job jobs.Config, rt registry.Running, st mesos.Status) (registry.Failover, bool) {
	now := s.Clock.Now().UTC()
	f := registry.Failover{TaskID: st.TaskID, Since: now, Attempts: rt.Attempts + 1, Parameter: rt.Parameter, RunKey: rt.RunKey}
	if _, _, runnable := s.catalog.Runnable(job.JobName); !runnable {
		return f, false
	}
	switch {
	case neverStarted(rt, st):
		f.Retry = true
		return f, true
	case rt.Attempts < job.MaxRetries:
		f.Retry = true
		f.NotBefore = now.Add(time.Duration(job.RetryBackoffSeconds) * time.Second << rt.Attempts)
		return f, true
	case job.Failover || job.JobExecutionType == jobs.Daemon:
		if rt.Attempts > 0 {
			f.NotBefore = now.Add(min(time.Second<<(rt.Attempts-1), maxFailoverBackoff))
		}
		return f, true
	}
	return f, false
}

// reasonReconciliation marks the master's answers to a reconciliation:
// they carry a task's latest state and can overtake the agent's reliable
// updates for it that still wait for their acknowledgement.
const reasonReconciliation = "REASON_RECONCILIATION"

// reasonExecutorTerminated marks an executor's refusal of a task it got
// while shutting down: the task never began.
const reasonExecutorTerminated = "REASON_EXECUTOR_TERMINATED"

// gone holds the terminal states that say the task's process is over (it
// finished, failed, was killed, or never began), unlike LOST, GONE or
// UNKNOWN, after which it may still run somewhere.
var gone = map[string]bool{"TASK_FINISHED": true, "TASK_FAILED": true, "TASK_KILLED": true, "TASK_ERROR": true}

// orphan handles an update for a task the registry does not hold as
// running: a live one is killed (it would otherwise run unaccounted), a
// finished one is only acknowledged. A live update for a task that a
// reconciliation answer already ended as gone is a stale one that the
// answer overtook: the task is over, so it is only acknowledged.
func (s *Scheduler) orphan(ctx context.Context, st mesos.Status) error {
	if s.overtaken.has(st.TaskID) {
		if IsTerminal(st.State) {
			s.overtaken.remove(st.TaskID) // the agent's own stream for the task has ended
		}
		return nil
	}
	if activeStates[st.State] || st.State == "TASK_UNREACHABLE" {
		s.Log.Warn("status: killing a task the registry does not know", "task", st.TaskID, "state", st.State)
		if err := s.Driver.Kill(ctx, st.TaskID, st.AgentID); err != nil {
			s.Log.Warn("status: kill orphan", "task", st.TaskID, "err", err)
		}
	}
	return nil
}

func (s *Scheduler) markState(ctx context.Context, tid jobs.TaskID, rt registry.Running, state string) error {
	if rt.State == state {
		return nil
	}
	rt.State = state
	rt.UpdatedAt = s.Clock.Now().UTC()
	err := s.Registry.Commit(ctx, store.Set(registry.RunningPathOf(tid.JobName, tid.Item), mustJSON(rt), rt.Version))
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		s.reloadRunning() // someone else wrote it: re-read
		return nil
	}
	if err == nil {
		rt.Version++
		s.putRunning(tid.JobName, tid.Item, rt)
	}
	return err
}

// finish removes the running entry (if it is still this task's) together
// with the extra ops, in one commit, and reports whether it committed.
func (s *Scheduler) finish(ctx context.Context, tid jobs.TaskID, rt registry.Running, extra []store.Op) (bool, error) {
	// The running entry goes last: a reader following the commit in op
	// order finds the run's record, retry or requeue before the shard is gone.
	ops := append(extra[:len(extra):len(extra)], store.Delete(registry.RunningPathOf(tid.JobName, tid.Item), rt.Version))
	err := s.Registry.Commit(ctx, ops...)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		s.reloadRunning()
		return false, nil
	}
	if err == nil {
		s.dropRunning(tid.JobName, tid.Item)
	}
	return err == nil, err
}

// requeueDaemon returns the op that queues a killed daemon job again.
func (s *Scheduler) requeueDaemon(ctx context.Context, job jobs.Config, exists bool) []store.Op {
	if !exists || job.JobExecutionType != jobs.Daemon {
		return nil
	}
	if _, _, ok := s.catalog.Runnable(job.JobName); !ok {
		return nil
	}
	if _, err := s.Registry.Trigger(ctx, job.JobName, false, s.Clock.Now()); err != nil {
		s.Log.Error("status: re-queue daemon", "job", job.JobName, "err", err)
	}
	return nil
}

// maxOvertaken bounds the memory of tasks ended by a reconciliation
// answer whose agent updates may still arrive (the oldest are forgotten).
const maxOvertaken = 1 << 16

// taskSet is a bounded set of task ids, forgetting the oldest first.
type taskSet struct {
	ids  map[string]bool
	ring []string // the ids in insertion order, a ring of maxOvertaken
	next int      // where the next id goes once the ring is full
}

func (t *taskSet) add(id string) {
	if t.ids == nil {
		t.ids = map[string]bool{}
	}
	if t.ids[id] {
		return
	}
	if len(t.ring) < maxOvertaken {
		t.ring = append(t.ring, id)
	} else {
		delete(t.ids, t.ring[t.next])
		t.ring[t.next] = id
		t.next = (t.next + 1) % maxOvertaken
	}
	t.ids[id] = true
}

func (t *taskSet) has(id string) bool { return t.ids[id] }

func (t *taskSet) remove(id string) { delete(t.ids, id) }

package task

import (
	"time"

	"github.com/ejcloud/elasticjob/queue"
)

// Update is a status update of one task, as an engine reports it.
type Update struct {
	TaskID  string
	State   State
	Reason  Reason // e.g. ReasonReconciliation ("" when unset)
	Source  Source // e.g. SourceExecutor ("" when unset)
	Message string
}

// Job is what the transition needs to know of the task's job.
type Job struct {
	Name     string
	Exists   bool // the job is registered
	Runnable bool // it may run now (neither it nor its app is disabled or missing)
	Daemon   bool
	// Failover relaunches a shard that failed for good (the job's failover
	// flag; DAEMON jobs always fail over).
	Failover           bool
	MaxRetries         int
	RetryBackoff       time.Duration
	PauseAfterFailures int
}

// Input is a status update with what the registry holds about its task.
type Input struct {
	Update Update
	// Entry is the shard's running entry when it is the update's task
	// (nil: the shard runs another task, or none).
	Entry *Entry
	// Overtaken: a reconciliation answer already ended this task as over,
	// so a live update that follows is a stale one it overtook.
	Overtaken bool
	// Relaunching: the task's launch was rolled back (its ACCEPT failed)
	// and waits in its queue to launch again under the same id
	// (queue.Relaunch). A live update of it is that launch having reached
	// the engine after all: it is not killed, since its relaunch is
	// refused as a duplicate and the running entry then follows it.
	Relaunching bool
	Job         Job
	// OthersRunning: another shard of the job runs. RetryPending: a shard
	// of the job waits for a retry within its run. RunPending: another
	// shard of the task's keyed run (Entry.RunKey) runs or waits to run
	// again (retry or failover).
	OthersRunning, RetryPending, RunPending bool
	Now                                     time.Time
	// Item is the task's shard. Report, Record and Runs are read only for
	// a terminal update of the shard's current task: how its process ran
	// as its executor reported it, its keyed run's record (zero when it
	// has none or the record is gone), and its job's run state (zero for
	// a job that is not registered).
	Item   int
	Report Report
	Record RunRecord
	Runs   RunState
}

// Report is how a task's process ran, as its executor reported it.
type Report struct {
	StartedAt, EndedAt time.Time
	Outputs            map[string]string
}

// Outcome is what an update changes. The zero Outcome changes nothing
// (the update is only acknowledged).
type Outcome struct {
	// Kill: the update is of a task the registry does not hold as running
	// that may still run (an orphan): it must be killed.
	Kill bool
	// Overtaken and Forget change the set of tasks a reconciliation
	// answer ended: this one joins it, or leaves it (its engine's own
	// stream for it has ended).
	Overtaken, Forget bool
	// Stale: the update is not about the shard's current task.
	Stale bool
	// Reconcile: the update may be the master refusing a second launch of
	// the current task (a fire's task id is the same at every launch), so
	// the engine is asked for the task's state instead of ending it on
	// this update (set with Stale).
	Reconcile bool
	// Mark is the entry with its new state, to write (nil: unchanged).
	Mark *Entry
	// Unreachable starts the task's unreachable timer; any other update
	// of a current task stops it.
	Unreachable bool
	// End: the task ended; its entry goes.
	End *End
	// Message, when set, is the update's message as history and the run's
	// record tell it: who killed the task (KilledMessage).
	Message string
}

// End is how a task ended and what follows.
type End struct {
	Entry  Entry
	Result Result
	// Retry is the shard's failover entry when it runs again (a retry
	// within the run, or a failover relaunch); nil: it does not.
	Retry *queue.Failover
	// RequeueDaemon: a killed DAEMON task's job is queued again.
	RequeueDaemon bool
	// RunEnds: the job's run ends with this task (run counting).
	RunEnds bool
	// RecordDone: the task's keyed run is over (its record is complete).
	RecordDone bool
	// Notify: a failure the job's error handler hears of.
	Notify bool
	// Record is the task's keyed run's record with this shard's end, to
	// write (nil: the task has no run key).
	Record *RunRecord
	// Runs is the job's run state to write (nil: unchanged); Pause is the
	// pause it decided (nil: none).
	Runs  *RunState
	Pause *Pause
}

// Transition applies one status update (the state machine in
// scheduler/README.md).
func Transition(in Input) Outcome {
	u := in.Update
	if DuplicateLaunch(u) {
		// The engine refused a second launch of a task it runs: nothing
		// changes (no end, no failover, no kill of the one running).
		return Outcome{Stale: true}
	}
	if in.Entry == nil {
		return orphan(in)
	}
	if RefusedLaunch(u) || RefusedWithItsGroup(u) {
		return Outcome{Stale: true, Reconcile: true}
	}
	var out Outcome
	if by := in.Entry.KilledBy; by != "" && u.State == Killed {
		u.Message = KilledMessage(by, u.Message)
		in.Update.Message, out.Message = u.Message, u.Message
	}
	if u.Reason == ReasonReconciliation && u.State.Over() {
		out.Overtaken = true
	}
	switch {
	case u.State.Active():
		out.Mark = mark(*in.Entry, u.State, in.Now)
	case u.State == Unreachable:
		out.Unreachable = true
		out.Mark = mark(*in.Entry, u.State, in.Now)
		if out.Mark != nil {
			out.Mark.StagingWhenLost = in.Entry.State == Staging || in.Entry.StagingWhenLost
		}
	case u.State == Finished:
		out.End = end(in, Success, nil)
	case u.State == Killed:
		e := end(in, Stopped, nil)
		e.RequeueDaemon = in.Job.Exists && in.Job.Daemon && in.Job.Runnable
		out.End = e
	case u.State.Failure():
		f, again := retryOf(in)
		var retry *queue.Failover
		res := Failure
		if again {
			retry = &f
			if f.Retry {
				res = Retrying
			}
		}
		e := end(in, res, retry)
		e.Notify = true
		out.End = e
		if msg, ok := lostBeforeStart(in, again); ok {
			in.Update.Message, out.Message = msg, msg
		}
	}
	if out.End != nil {
		account(in, out.End)
	}
	return out
}

// account folds a task's end into its keyed run's record and its job's
// run state (a job that is not registered has its runs not counted).
func account(in Input, e *End) {
	u := in.Update
	if e.Entry.RunKey != "" {
		so := ShardOutcome{Item: in.Item, TaskID: u.TaskID, State: u.State, Message: u.Message,
			StartedAt: in.Report.StartedAt, EndedAt: in.Report.EndedAt, Outputs: in.Report.Outputs}
		rec := RecordShard(in.Record, in.Job.Name, so, e.RecordDone, in.Now)
		rec.Failed = rec.Failed || e.Result == Failure
		e.Record = &rec
	}
	if !in.Job.Exists {
		return
	}
	cause := u.Message
	if cause == "" {
		cause = string(u.State)
	}
	next, pause, changed := CountRun(in.Runs, e.Result, cause, e.RunEnds, in.Job.PauseAfterFailures, in.Job.Runnable, in.Now)
	if changed {
		e.Runs = &next
	}
	e.Pause = pause
}

// orphan handles an update for a task the registry does not hold as
// running: a live one is killed (it would otherwise run unaccounted), a
// finished one is only acknowledged. A live update for a task that a
// reconciliation answer already ended as over is a stale one that the
// answer overtook: the task is over, so it is only acknowledged.
func orphan(in Input) Outcome {
	s := in.Update.State
	if in.Overtaken {
		return Outcome{Stale: true, Forget: s.Terminal()}
	}
	return Outcome{Stale: true, Kill: s.Live() && !in.Relaunching}
}

func mark(e Entry, s State, now time.Time) *Entry {
	if e.State == s {
		return nil
	}
	e.State, e.UpdatedAt, e.StagingWhenLost = s, now.UTC(), false
	return &e
}

func end(in Input, res Result, retry *queue.Failover) *End {
	withinRun := retry != nil && retry.Retry
	e := &End{Entry: *in.Entry, Result: res, Retry: retry}
	e.RunEnds = !withinRun && !in.OthersRunning && !in.RetryPending
	e.RecordDone = retry == nil && !in.RunPending
	return e
}

// MaxNeverStartedRetries bounds how often a shard whose task never started
// is launched again without the job's failover flag.
const MaxNeverStartedRetries = 3

// MaxFailoverBackoff bounds the delay between repeated failovers of a shard.
const MaxFailoverBackoff = time.Minute

// NeverStarted reports a task that failed before its executor began it,
// e.g. because its executor exited just as the task arrived, or because
// the engine refused to place it (a node filled meanwhile): its last state
// is still STAGING and the failure comes from the agent or the master, not
// from the executor (which sends STARTING only when it is slow to start a
// task, so its own failure of a STAGING task may be one of the job's), or
// from an executor refusing it while shutting down. Running it again
// cannot run the job twice, so it is queued like a failover even when the
// job's failover flag is off. TASK_ERROR (an invalid task) is not retried.
//
// A task that went UNREACHABLE while still STAGING (Entry.StagingWhenLost)
// never started only when the master says so: TASK_DROPPED, which Mesos
// sends to a partition-aware framework for a task that failed to launch
// and is not running (Mesos's documented meaning; an agent back under its
// id that does not know the task makes Mesos 1.11 answer TASK_GONE,
// "Task is unknown to the agent", which is not this: realmesos
// TestStagingTaskOfAPartitionedAgent); any other
// end of it is lostBeforeStart's.
func NeverStarted(e Entry, u Update) bool {
	refused := u.Source != SourceExecutor || u.Reason == ReasonExecutorTerminated
	staging := e.State == Staging || (e.State == Unreachable && e.StagingWhenLost && u.State == Dropped)
	return staging && refused && u.State != Error && e.Attempts < MaxNeverStartedRetries
}

// retryOf decides whether a failed shard runs again and when:
//   - a task that never started: at once, at most MaxNeverStartedRetries times;
//   - maxRetries not used up: after retryBackoffSeconds × 2^(attempt-1);
//   - failover=true or a DAEMON job: at once the first time, then with a
//     backoff doubling from 1 s up to MaxFailoverBackoff, so a job that
//     always fails cannot spin.
func retryOf(in Input) (queue.Failover, bool) {
	e, now := *in.Entry, in.Now.UTC()
	f := queue.Failover{TaskID: in.Update.TaskID, Since: now, Attempts: e.Attempts + 1, Parameter: e.Parameter, RunKey: e.RunKey, ScheduledAt: e.ScheduledAt,
		Nominal: e.Nominal}
	if !in.Job.Runnable {
		return f, false
	}
	switch {
	case NeverStarted(e, in.Update):
		f.Retry = true
		return f, true
	case e.Attempts < in.Job.MaxRetries:
		f.Retry = true
		f.NotBefore = now.Add(in.Job.RetryBackoff << e.Attempts)
		return f, true
	case in.Job.Failover || in.Job.Daemon:
		if e.Attempts > 0 {
			f.NotBefore = now.Add(min(time.Second<<(e.Attempts-1), MaxFailoverBackoff))
		}
		return f, true
	}
	return f, false
}

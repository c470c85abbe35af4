package embedded

import (
	"bytes"
	"slices"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// The recovery decisions, as pure functions of what the checkpoint holds
// and what the start found running: recover.go reads the disk and the
// processes, applies these and sends what they imply.

// runFate is what a restarted agent does with an executor run of its
// checkpoint.
type runFate int

const (
	fateReattach runFate = iota // its process still runs: take it over, await its re-registration
	fateEnded                   // it ended before the restart (recorded as completed)
	fateGone                    // it died with the agent: its live tasks fail
)

// fateOf decides a checkpointed run's fate: alive is whether its process
// (same boot, pid and start time) still runs.
func fateOf(run ckRun, alive bool) runFate {
	switch {
	case alive && !run.completed:
		return fateReattach
	case run.completed:
		return fateEnded
	}
	return fateGone
}

// recoveryOrder orders a framework's runs for recovery: ended runs first,
// so that a live run of the same executor id holds the framework's entry
// for that id. The order is otherwise kept.
func recoveryOrder(runs []ckRun, alive map[string]bool) []ckRun {
	out := slices.Clone(runs)
	slices.SortStableFunc(out, func(a, b ckRun) int {
		return cmpBool(alive[a.containerID], alive[b.containerID])
	})
	return out
}

// goneAt dates the end of a run that died with the agent: when it was
// last seen alive, or now when the start had to kill what its tasks left
// running (those tasks ran until now).
func goneAt(lastSeen time.Time, orphaned bool, now time.Time) time.Time {
	if orphaned {
		return now
	}
	return lastSeen
}

// latestSign is the last sign of life of an executor that did not outlive
// the agent: the later of the agent's alive mark and its files' last
// writes (zero times are ignored), never after now, now when nothing is
// known.
func latestSign(agentAlive time.Time, writes []time.Time, now time.Time) time.Time {
	at := agentAlive
	for _, m := range writes {
		if m.After(at) {
			at = m
		}
	}
	if at.IsZero() || at.After(now) {
		return now
	}
	return at
}

// taskReplay is a task rebuilt from its checkpointed records.
type taskReplay struct {
	state    mesos.TaskState
	status   mesos.TaskStatus // the latest update
	pending  []pendingUpdate  // not acknowledged: forwarded again when the framework subscribes
	acked    map[string]bool  // acknowledged update uuids
	launched bool             // the executor was sent it (or reported on it)
	group    bool             // it came in a LAUNCH_GROUP
	forget   bool             // its terminal update was acknowledged: nothing is left to recover
	released bool             // terminal: its resources are no longer charged
}

// replayTask replays a task's records in order: its latest state, the
// updates not acknowledged yet (in order) and whether the executor has
// it. Records that cannot be decoded are skipped.
func replayTask(id mesos.TaskID, records []record) taskReplay {
	r := taskReplay{state: mesos.TASK_STAGING, acked: map[string]bool{},
		status: mesos.TaskStatus{TaskID: id, State: mesos.TASK_STAGING.Enum()}}
	for _, rec := range records {
		switch {
		case rec.Task != nil:
			r.group = rec.Group
		case rec.Launched:
			r.launched = true
		case rec.Update != nil:
			var st mesos.TaskStatus
			if st.Unmarshal(rec.Update) != nil {
				continue
			}
			r.state, r.status = st.GetState(), st
			r.pending = append(r.pending, pendingUpdate{status: st, fromExecutor: rec.Executor})
			r.launched = r.launched || rec.Executor
		case rec.Ack != nil:
			r.acked[string(rec.Ack)] = true
			if len(r.pending) > 0 && bytes.Equal(r.pending[0].status.UUID, rec.Ack) {
				r.pending = r.pending[1:]
			}
		}
	}
	r.released = isTerminal(r.state)
	r.forget = r.released && len(r.pending) == 0
	return r
}

// awaitsLaunch reports whether a recovered task is to be sent to its
// executor when it subscribes again: never sent, and not ended.
func awaitsLaunch(launched bool, state mesos.TaskState) bool { return !launched && !isTerminal(state) }

// lostInRestart picks, of a recovered executor's live tasks, those it was
// sent (the agent checkpointed that) but does not know when it subscribes
// again (known: the ids it reports): the agent stopped before the LAUNCH
// reached it, so they are lost.
func lostInRestart(live []*task, known map[string]bool) []*task {
	var out []*task
	for _, t := range live {
		if t.launched && t.state == mesos.TASK_STAGING && !known[t.info.TaskID.Value] {
			out = append(out, t)
		}
	}
	return out
}

// keepOnClose decides whether an agent that stops leaves an executor
// running for its next start: the executor's framework checkpoints, its
// process was started, it subscribed (in this run, or in an earlier one
// and is waiting to again) and recovery reconnects. One that never
// subscribed runs no task yet and nothing would bound its life.
func keepOnClose(checkpointed, started bool, state execState, recovered bool, mode string) bool {
	subscribed := state == execRunning || (recovered && state == execLaunching)
	return checkpointed && started && subscribed && mode == RecoverReconnect
}

// loss is why a framework is told a task ended that it can no longer
// have.
type loss int

const (
	lossDropped        loss = iota // it never reached the agent (invalid offers, launched during a restart)
	lossGone                       // its agent or executor lost it for good (re-registration timeout)
	lossUnknown                    // reconciliation: no one knows it, and it names no known agent
	lossUnknownOnAgent             // reconciliation: no one knows it on the known agent it names
)

// lossState is the state a task's loss is reported with: TASK_LOST to a
// framework that is not PARTITION_AWARE, the precise state to one that is.
func lossState(partitionAware bool, l loss) mesos.TaskState {
	if !partitionAware {
		return mesos.TASK_LOST
	}
	switch l {
	case lossDropped:
		return mesos.TASK_DROPPED
	case lossUnknown:
		return mesos.TASK_UNKNOWN
	}
	return mesos.TASK_GONE
}

// keepRecoveredFramework reports whether a checkpointed framework is kept
// after its runs are recovered: something of it (an executor, a task with
// updates to deliver) is left.
func keepRecoveredFramework(executors, tasks int) bool { return executors > 0 || tasks > 0 }

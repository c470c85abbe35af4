package soak

import (
	"time"
)

// historyLag is how long after a run's end its history row may lag.
const historyLag = 2 * time.Second

// checkHistory: every ended run of a TRANSIENT job is in history once,
// with its outcome. A DAEMON task is not one execution: history records
// each run its executor reports (BEGIN and COMPLETE of the cron inside the
// task, sampled by the app's eventTraceSamplingCount), none when it
// reports none, as the simulated agents' tasks do, several when it ran
// several times; its rows are not the task's (docs/history.md).
//
// A run the simulated agent ended just before its mesos-local was killed may have its end in the
// run log and never in the scheduler: the update died with the agent, whose successor answers the
// reconciliation with the task lost, and history records that failure (the shard runs again as
// FAILOVER). Such a run may be a failure in history.
//
// A run whose process records its own end (real agents: the job script writes TASK_FINISHED when it
// exits 0) may be killed in history when a change that closed its job's window (a disable or
// deregister kills the job's running tasks) was sent while it ran: the kill reached the executor
// before it saw the process end, and the executor reports the task killed, as Mesos's own does.
// where prefixes each anomaly's detail (the replica's name).
func (rep *Report) checkHistory(runs []run, jobs map[string]Job, where string, hist map[string][]Outcome, read time.Time, faults []Fault) {
	for _, r := range runs {
		if jobs[r.Job].Daemon || r.end.IsZero() || (!read.IsZero() && r.end.After(read.Add(-historyLag))) {
			continue
		}
		hs := hist[r.Task]
		if len(hs) != 1 {
			rep.add(HistoryMissing, r.Job, "%stask %s (started %s) is in history %d times", where, r.Task, r.At.UTC().Format("15:04:05.000"), len(hs))
			continue
		}
		if hs[0].Open {
			rep.add(HistoryWrong, r.Job, "%stask %s ended %s at %s, history has no completion", where, r.Task, r.state, r.end.UTC().Format("15:04:05.000"))
			continue
		}
		if want := r.state == "TASK_FINISHED"; hs[0].Success != want && !(want && (updateLost(r, faults) || killedByChange(r, jobs[r.Job].Windows))) {
			rep.add(HistoryWrong, r.Job, "%stask %s ended %s, history says success=%v", where, r.Task, r.state, hs[0].Success)
		}
		if !r.Nominal.Equal(hs[0].Nominal) {
			rep.add(HistoryWrong, r.Job, "%stask %s served the instant %s, history says %s", where, r.Task, fmtInstant(r.Nominal), fmtInstant(hs[0].Nominal))
		}
	}
}

// fmtInstant is a cron instant as the checker prints it ("none": zero).
func fmtInstant(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("15:04:05.000")
}

// killedByChange: a change closing one of the job's windows was sent before the run ended, or
// within updateLag after, and answered after it started.
func killedByChange(r run, ws []Window) bool {
	for _, w := range ws {
		if !w.Closing.IsZero() && !r.end.Add(updateLag).Before(w.To) && r.At.Before(w.Closing) {
			return true
		}
	}
	return false
}

// updateLag bounds how long a simulated agent's status update takes to
// reach the scheduler.
const updateLag = time.Second

// maxLossStall is the longest a chunk waits on a proxied link losing
// packets (proxy.go, lossStall: 0.2 s doubling up to 6.4 s).
const maxLossStall = 12600 * time.Millisecond

// updateLost: the agents were killed before the run's end could reach the scheduler: within
// updateLag after it ended, or, when the leader's agent link was losing packets as it ended, within
// the longest stall after that fault healed. On real Mesos (agent-lost) the executor holding the
// update dies with its agent, whose work directory goes too: the task is LOST once unreachable too
// long. On the real Kubernetes node's crash (endDiedWithNode) the executor is killed with its
// container before or as it reports.
func updateLost(r run, faults []Fault) bool {
	until := r.end.Add(updateLag)
	for _, x := range faults {
		if x.Kind == "leader-agents-loss" && !r.end.Before(x.Start) && !r.end.After(x.End) {
			until = maxTime(until, x.End.Add(maxLossStall+updateLag))
		}
	}
	for _, f := range faults {
		if (f.Kind == "agents-killed" || f.Kind == AgentLost) && !f.Start.Before(r.end) && f.Start.Before(until) {
			return true
		}
		if endDiedWithNode(r, f) {
			return true
		}
	}
	return false
}

package scheduler

import (
	"context"
	"errors"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// DaemonObserver is implemented by observers that record daemon runs
// (history); the scheduler calls it for every BEGIN and COMPLETE report.
type DaemonObserver interface {
	DaemonRun(ev TaskEvent, rep jobs.DaemonReport)
}

// onDaemonReport marks a daemon task busy (BEGIN) or idle (COMPLETE) and
// hands the run to the observers.
func (s *Scheduler) onDaemonReport(ctx context.Context, agentID string, rep jobs.DaemonReport) {
	tid, _ := jobs.ParseTaskID(rep.TaskID)
	running, err := s.runningOf(ctx, tid.JobName)
	if err != nil {
		s.Log.Warn("daemon report: read running task", "task", rep.TaskID, "err", err)
		return
	}
	rt, ok := running[tid.Item]
	if !ok || rt.TaskID != rep.TaskID {
		return // a report of a task that is no longer current
	}
	busy := rep.Type == jobs.DaemonBegin
	if rt.Busy != busy {
		rt.Busy = busy
		rt.UpdatedAt = s.Clock.Now().UTC()
		err := s.Registry.Commit(ctx, store.Set(registry.RunningPathOf(tid.JobName, tid.Item), mustJSON(rt), rt.Version))
		switch {
		case err == nil:
			rt.Version++
			s.putRunning(tid.JobName, tid.Item, rt)
		case errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound):
			s.reloadRunning()
		default:
			s.Log.Warn("daemon report: mark busy/idle", "task", rep.TaskID, "err", err)
		}
	}
	job, _ := s.catalog.Job(tid.JobName)
	ev := TaskEvent{TaskID: rep.TaskID, Job: tid.JobName, App: job.AppName, AgentID: agentID, Hostname: rt.Hostname,
		Item: tid.Item, Source: string(rep.ExecutionSource), At: s.Clock.Now()}
	if d, ok := s.Observer.(DaemonObserver); ok {
		d.DaemonRun(ev, rep)
	}
	if rep.Type == jobs.DaemonComplete && !rep.Success {
		s.notifyFailure(job, ev, mesos.Status{TaskID: rep.TaskID, AgentID: agentID, State: "DAEMON_RUN_FAILED", Message: rep.Message})
	}
	if rep.Type == jobs.DaemonComplete {
		s.daemonRunEnded(ctx, job, ev, rep)
	}
}

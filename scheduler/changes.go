package scheduler

import (
	"context"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

func mustJSON(v any) []byte { return registry.MustJSON(v) }

// configEvent applies a configuration event to the catalog and reacts to
// the change, both on the loop.
func (s *Scheduler) configEvent(ctx context.Context, ev store.Event) {
	ch, err := s.catalog.apply(ctx, ev)
	if err != nil {
		s.Log.Warn("catalog: apply change", "path", ev.Path, "err", err)
		return
	}
	if ch.Kind != "" {
		s.onChange(ctx, ch)
	}
}

// onChange reacts to a configuration change seen through the store: a
// job registered, updated or deleted, an app changed, a disable flag set or
// cleared, or a resync.
func (s *Scheduler) onChange(ctx context.Context, ch Change) {
	switch ch.Kind {
	case "all":
		s.reloadRunning()
		s.producer.RescheduleAll()
		s.queueDaemons(ctx)
	case "job", "disable-job":
		s.jobChanged(ctx, ch.Name)
	case "app", "disable-app":
		for _, j := range s.catalog.JobsOfApp(ch.Name) {
			s.jobChanged(ctx, j)
		}
		if !s.catalog.AppActive(ch.Name) {
			s.stopExecutors(ctx, ch.Name)
		}
	}
}

// jobChanged kills the job's running tasks (update, disable and deregister
// all stop the current run), clears its queues when it no longer runs, and
// reschedules it.
func (s *Scheduler) jobChanged(ctx context.Context, name string) {
	s.killJob(ctx, name)
	if _, _, ok := s.catalog.Runnable(name); !ok {
		if err := s.Registry.ClearReady(ctx, name); err != nil {
			s.Log.Warn("clear ready queue", "job", name, "err", err)
		}
		if err := s.Registry.Commit(ctx, deleteOp(registry.FailoverPath+"/"+name)); err != nil {
			s.Log.Warn("clear failover queue", "job", name, "err", err)
		}
	} else {
		s.queueDaemon(ctx, name)
	}
	s.producer.Reschedule(name)
}

func (s *Scheduler) killJob(ctx context.Context, name string) {
	running, err := s.runningOf(ctx, name)
	if err != nil {
		s.Log.Warn("kill job: read running tasks", "job", name, "err", err)
		return
	}
	for _, rt := range running {
		if err := s.Driver.Kill(ctx, rt.TaskID, rt.AgentID); err != nil {
			s.Log.Warn("kill task", "task", rt.TaskID, "err", err)
		}
	}
}

// stopExecutors shuts down every executor of an app (app deleted or
// disabled).
func (s *Scheduler) stopExecutors(ctx context.Context, appName string) {
	for k := range s.executors {
		if k.App != appName {
			continue
		}
		if err := s.Driver.Shutdown(ctx, jobs.ExecutorID(k.App, k.AgentID), k.AgentID); err != nil {
			s.Log.Warn("shutdown executor", "app", k.App, "agent", k.AgentID, "err", err)
		}
		delete(s.executors, k)
	}
}

// queueDaemons queues every runnable daemon job that is neither running
// nor queued (at leadership start and after a resync).
func (s *Scheduler) queueDaemons(ctx context.Context) {
	for _, name := range s.catalog.JobNames() {
		s.queueDaemon(ctx, name)
	}
}

func (s *Scheduler) queueDaemon(ctx context.Context, name string) {
	job, _, ok := s.catalog.Runnable(name)
	if !ok || job.JobExecutionType != jobs.Daemon {
		return
	}
	running, err := s.runningOf(ctx, name)
	if err != nil || len(running) >= job.ShardingTotalCount {
		return
	}
	if _, err := s.Registry.Trigger(ctx, name, false, s.Clock.Now()); err != nil {
		s.Log.Warn("queue daemon job", "job", name, "err", err)
	}
}

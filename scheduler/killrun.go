package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// Errors of KillRun (the API maps them to 409 and 400).
var (
	ErrNoRun         = errors.New("scheduler: no running execution")
	ErrDaemonRunKill = errors.New("scheduler: a DAEMON job's run cannot be stopped alone")
)

// KilledRun is what KillRun stopped.
type KilledRun struct {
	Tasks   []string `json:"taskIds"` // the running tasks killed
	Dropped int      `json:"droppedShards"`
	// Nominal is the cron instant the run served (zero: none recorded):
	// a preempted run queued again serves it still.
	Nominal time.Time `json:"-"`
	// Run is the override the run was launched with (nil: a plain run):
	// its trigger's parameter, idempotency key and backfill instant, so a
	// preempted run queued again is still that trigger's run (its key's
	// record and a workflow node's inputs follow the key).
	Run *queue.PendingRun `json:"-"`
}

// KillRun stops the job's running execution and keeps the job: each
// running shard is marked killed by by (its end then says so, in history
// too) and killed; shards of it waiting to run again (a retry, a
// failover) are dropped. Pending executions and the cron stay. A DAEMON
// job's shards are its resident processes (a killed one starts again):
// disabling the job stops them.
func (s *Scheduler) KillRun(ctx context.Context, job, by string) (KilledRun, error) {
	var out KilledRun
	err := s.call(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.killRun(ctx, job, by)
		return err
	})
	return out, err
}

func (s *Scheduler) killRun(ctx context.Context, job, by string) (KilledRun, error) {
	var out KilledRun
	cfg, ok := s.catalog.Job(job)
	if ok && cfg.JobExecutionType == jobs.Daemon {
		return out, fmt.Errorf("%w: job '%s' is a DAEMON job, whose shards run until it is disabled; disable it to stop them", ErrDaemonRunKill, namespace.Name(job))
	}
	reg := s.deps.Registry
	running, err := s.st.runningOf(ctx, reg, job)
	if err != nil {
		return out, err
	}
	fo, err := reg.Work().FailoverOf(ctx, job)
	if err != nil {
		return out, err
	}
	if len(running) == 0 && len(fo) == 0 {
		return out, fmt.Errorf("%w: job '%s' has no running execution to stop", ErrNoRun, namespace.Name(job)) // named as its namespace knows it
	}
	ch := reg.Change()
	marked := map[int]task.Entry{}
	for item, e := range running {
		e.KilledBy = by
		ch.Mark(job, item, e)
		marked[item] = e
	}
	if len(fo) > 0 {
		ch.DropFailover(job, -1)
	}
	if err := ch.Commit(ctx); err != nil {
		s.st.reloadRunning()
		return out, fmt.Errorf("stop the run of job %s: %w", namespace.Name(job), err)
	}
	s.queues.changed()
	out.Dropped = len(fo)
	for item, e := range marked {
		e.Version++
		s.st.putRunning(job, item, e)
		if err := killTask(ctx, s.st, s.deps.Driver, e.TaskID, e.AgentID); err != nil {
			s.deps.Log.Warn("kill run: kill task", "task", e.TaskID, "err", err)
		}
		out.Tasks = append(out.Tasks, e.TaskID)
		if out.Nominal.IsZero() { // the shards of one execution serve one instant
			out.Nominal = e.Nominal
		}
		if out.Run == nil && (e.Parameter != nil || e.RunKey != "") { // and carry one trigger's override
			param := cfg.JobParameter
			if e.Parameter != nil {
				param = *e.Parameter
			}
			out.Run = &queue.PendingRun{JobParameter: param, IdempotencyKey: e.RunKey, ScheduledAt: e.ScheduledAt}
		}
	}
	s.deps.Log.Info("run stopped", "job", job, "by", by, "tasks", len(out.Tasks), "dropped", out.Dropped)
	return out, nil
}

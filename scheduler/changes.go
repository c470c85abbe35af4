package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// configFollower reacts on the loop to configuration changes seen
// through the registry's watch: it applies each to the catalog, together
// with what the change does to running tasks, so a launch round never
// runs on a configuration whose change has not been acted on yet. (When
// the catalog was updated on its own goroutine, a round could launch a
// just-registered job on the new configuration and the change, handled a
// moment later, then killed those tasks as the old configuration's.)
type configFollower struct {
	reg      *registry.Registry
	driver   engine.Driver
	clock    clock.Clock
	log      *slog.Logger
	st       *state
	catalog  *Catalog
	producer *Producer
	queues   *queues
	runs     *durations
}

// apply applies a change to the catalog and reacts to it.
func (c *configFollower) apply(ctx context.Context, ch registry.ConfigChange) {
	was, had := c.catalog.Job(ch.Name) // a deleted job's kind is read before it goes
	if err := c.catalog.apply(ctx, ch); err != nil {
		c.log.Warn("catalog: apply change", "change", ch, "err", err)
		return
	}
	switch ch.Kind {
	case registry.ConfigAll:
		c.st.reloadRunning()
		c.producer.RescheduleAll()
		c.queueDaemons(ctx)
	case registry.ConfigJob, registry.ConfigJobDisabled:
		now, exists := c.catalog.Job(ch.Name)
		if had && !exists && ch.Kind == registry.ConfigJob {
			c.markDeleted(ctx, ch.Name, was.JobExecutionType == jobs.Daemon)
		}
		if had && exists && ch.Kind == registry.ConfigJob && placementOnly(was, now) {
			// A DAEMON job moved by its own clusters runs on: the launch round moves the
			// shards that must move (daemonmove.go), with its declared overlap if any.
			c.queues.changed()
			c.producer.RescheduleFrom(ch.Name, c.changedAt(ctx, ch.Name))
			return
		}
		c.jobChanged(ctx, ch.Name, c.changedAt(ctx, ch.Name))
	case registry.ConfigApp, registry.ConfigAppDisabled:
		for _, j := range c.catalog.JobsOfApp(ch.Name) {
			c.jobChanged(ctx, j, time.Time{}) // an app's change records no instant: from now
		}
		if !c.catalog.AppActive(ch.Name) {
			c.stopExecutors(ctx, ch.Name)
		}
	}
}

// refresh reloads a job whose fire, computed from the configuration the
// catalog holds (config), was found void (Events.Stale), if the
// registry holds another: the catalog missed the change (its apply
// failed, a registry read refused under a fault), and without the reload
// every fire of the job would be void until the next change or resync.
// A void fire of the same configuration (the job disabled meanwhile) or
// a change applied since reloads nothing.
func (c *configFollower) refresh(ctx context.Context, name string, config uint64) {
	if _, held, ok := c.catalog.runnableStored(name); !ok || held != config {
		return // applied since
	}
	n, err := c.reg.Config().StoredJob(ctx, name)
	if err == nil && n.Sum() == config {
		return
	}
	if err != nil && !errors.Is(err, registry.ErrJobNotFound) {
		c.log.Warn("read a job whose fire was void", "job", name, "err", err)
		return
	}
	c.log.Warn("catalog: a job's configuration was behind the registry's; reloading it", "job", name)
	c.apply(ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: name})
}

// changedAt is the instant the job's last change recorded (its gate:
// registry.Config.JobChangedAt; zero when none or unreadable): the
// producer schedules the job from it (Producer.RescheduleFrom).
func (c *configFollower) changedAt(ctx context.Context, name string) time.Time {
	if _, _, ok := c.catalog.Runnable(name); !ok {
		return time.Time{}
	}
	at, err := c.reg.Config().JobChangedAt(ctx, name)
	if err != nil {
		c.log.Warn("read when the job changed; scheduling it from now", "job", name, "err", err)
		return time.Time{}
	}
	return at
}

// placementOnly reports a change of a DAEMON job that touches only where its shards
// run (clusters, spreadClusters, moveOverlapSeconds): its running shards are not
// restarted by it, since what they run is the same.
func placementOnly(was, now jobs.Config) bool {
	if was.JobExecutionType != jobs.Daemon || now.JobExecutionType != jobs.Daemon {
		return false
	}
	was.Clusters, was.SpreadClusters, was.MoveOverlapSeconds = nil, false, 0
	now.Clusters, now.SpreadClusters, now.MoveOverlapSeconds = nil, false, 0
	return reflect.DeepEqual(was, now)
}

// jobChanged kills the job's running tasks (update, disable and deregister
// all stop the current run), clears its queues when it no longer runs, and
// reschedules it: from changed, when the change recorded its instant, else
// from now.
func (c *configFollower) jobChanged(ctx context.Context, name string, changed time.Time) {
	c.killJob(ctx, name)
	if _, exists := c.catalog.Job(name); !exists {
		c.runs.forget(name) // deleted: a job registered under its name starts anew
	}
	if _, _, ok := c.catalog.Runnable(name); !ok {
		if err := c.reg.Change().DropReady(name).DropFailover(name, -1).Commit(ctx); err != nil {
			c.log.Warn("clear the job's queues", "job", name, "err", err)
		}
		c.queues.changed()
	} else {
		c.queueDaemon(ctx, name)
	}
	c.producer.RescheduleFrom(name, changed)
}

// markDeleted marks the running tasks of a job just deleted as killed by
// the deletion, before the kill.
func (c *configFollower) markDeleted(ctx context.Context, name string, daemon bool) {
	running, err := c.st.runningOf(ctx, c.reg, name)
	if err != nil || len(running) == 0 {
		return
	}
	by := task.KilledByDeletion
	if daemon {
		by = task.KilledByDaemonDeletion
	}
	ch := c.reg.Change()
	marked := map[int]task.Entry{}
	for item, e := range running {
		e.KilledBy = by
		ch.Mark(name, item, e)
		marked[item] = e
	}
	if err := ch.Commit(ctx); err != nil {
		c.log.Warn("mark a deleted job's tasks", "job", name, "err", err)
		c.st.reloadRunning()
		return
	}
	for item, e := range marked {
		e.Version++
		c.st.putRunning(name, item, e)
	}
}

func (c *configFollower) killJob(ctx context.Context, name string) {
	running, err := c.st.runningOf(ctx, c.reg, name)
	if err != nil {
		c.log.Warn("kill job: read running tasks", "job", name, "err", err)
		return
	}
	for _, rt := range running {
		if err := killTask(ctx, c.st, c.driver, rt.TaskID, rt.AgentID); err != nil {
			c.log.Warn("kill task", "task", rt.TaskID, "err", err)
		}
	}
	// A DAEMON shard's old task in an overlapping move is of the run that stops too.
	retiring, err := c.st.retiringAll(ctx, c.reg)
	if err != nil {
		c.log.Warn("kill job: read retiring tasks", "job", name, "err", err)
		return
	}
	for _, r := range retiring[name] {
		killRetiring(ctx, c.driver, c.log, c.st, c.clock.Now(), r, "its job changed")
	}
}

// stopExecutors shuts down every executor of an app (app deleted or
// disabled).
func (c *configFollower) stopExecutors(ctx context.Context, appName string) {
	for k := range c.st.executors {
		if k.App != appName {
			continue
		}
		if err := c.driver.Shutdown(ctx, jobs.ExecutorID(k.App, k.AgentID), k.AgentID); err != nil {
			c.log.Warn("shutdown executor", "app", k.App, "agent", k.AgentID, "err", err)
		}
		delete(c.st.executors, k)
	}
}

// queueDaemons queues every runnable daemon job that is neither running
// nor queued (at leadership start and after a resync).
func (c *configFollower) queueDaemons(ctx context.Context) {
	for _, name := range c.catalog.JobNames() {
		c.queueDaemon(ctx, name)
	}
}

func (c *configFollower) queueDaemon(ctx context.Context, name string) {
	job, _, ok := c.catalog.Runnable(name)
	if !ok || job.JobExecutionType != jobs.Daemon {
		return
	}
	running, err := c.st.runningOf(ctx, c.reg, name)
	if err != nil || len(running) >= job.ShardingTotalCount {
		return
	}
	if _, err := c.reg.Work().TriggerBy(ctx, name, false, c.clock.Now(), registry.ByDaemon); err != nil {
		c.log.Warn("queue daemon job", "job", name, "err", err)
	}
	c.queues.changed()
}

package scheduler

import (
	"context"
	"slices"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// moveDaemons moves the running DAEMON shards off a cluster that no longer takes their
// job's work — drained, or no longer among the clusters the job (or its namespace) names —
// when another of their clusters takes work. It stops the shard; the kill's TASK_KILLED
// queues the job again (task.Transition's RequeueDaemon) and the round places the shard on a
// cluster that takes it: a shard stops before it starts elsewhere, so it never runs twice.
// Each task is asked to stop once per term (a kill that fails is retried by the next
// reconciliation's view of it, not by every round). A job that declares an overlap
// (moveOverlapSeconds) starts the shard elsewhere first instead (overlap.go).
func (l *launcher) moveDaemons(ctx context.Context, v round.View) {
	defer l.sweepRetiring(ctx, v)
	if len(v.Clusters) == 0 {
		return
	}
	takes := make(map[string]bool, len(v.Clusters))
	all := make([]string, 0, len(v.Clusters))
	for _, c := range v.Clusters {
		takes[c.Name] = !c.Drained
		all = append(all, c.Name)
	}
	stillRunning := map[string]bool{}
	for job, items := range v.Running {
		cfg, ok := l.catalog.Job(job)
		if !ok || cfg.JobExecutionType != jobs.Daemon {
			continue
		}
		allowed := cfg.Clusters
		if len(allowed) == 0 {
			allowed = v.NamespaceClusters[namespace.Of(job)]
		}
		if len(allowed) == 0 {
			allowed = all
		}
		for item, e := range items {
			if !e.State.Active() || e.State == task.Killing || e.KilledBy != "" {
				continue
			}
			cur := engine.ClusterOf(e.AgentID)
			if cur == "" {
				cur = all[0] // an id naming no cluster is the home cluster's
			}
			if takes[cur] && slices.Contains(allowed, cur) {
				continue
			}
			if !slices.ContainsFunc(allowed, func(c string) bool { return c != cur && takes[c] }) {
				continue // nowhere else to go: it runs on where it is
			}
			stillRunning[e.TaskID] = true
			if cfg.MoveOverlapSeconds > 0 {
				l.startOverlap(ctx, v.Now, job, item, e, cfg, cur, !takes[cur])
				continue
			}
			if l.moved[e.TaskID] {
				continue
			}
			l.moved[e.TaskID] = true
			l.log.Info("moving a DAEMON shard to another cluster: stopping it where it runs", "job", job, "item", item,
				"task", e.TaskID, "cluster", cur, "drained", !takes[cur])
			if err := killTask(ctx, l.st, l.driver, e.TaskID, e.AgentID); err != nil {
				l.log.Warn("stop a DAEMON shard to move it", "task", e.TaskID, "err", err)
			}
		}
	}
	for id := range l.moved {
		if !stillRunning[id] {
			delete(l.moved, id)
		}
	}
	for id := range l.overlapRetry {
		if !stillRunning[id] {
			delete(l.overlapRetry, id)
		}
	}
}

package registry

import (
	"context"
	"fmt"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
)

// InUse is what the running tasks of r's namespace hold: each running
// shard its job's resources, and once per executor (app and agent) its
// app's: the sum the launch round admits against the namespace's
// guarantee and limit, but for executors idle between runs, which the
// round counts too until they exit (the registry does not know them).
// A retiring task (RetiringPath: a DAEMON shard's old task while its move
// overlaps) holds its resources until it ends, and counts as the round
// counts it. The executor of the namespace's HTTP jobs without an app
// (jobs.HTTPApp, which no namespace holds) counts as app.HTTPOnly's, as
// the round counts it. A job or app deregistered meanwhile counts nothing.
func (tn Tenancy) InUse(ctx context.Context) (namespace.Resources, error) {
	var in namespace.Resources
	running, err := tn.r.Work().RunningTasks(ctx)
	if err != nil {
		return in, fmt.Errorf("in use: read the running tasks: %w", err)
	}
	retiring, err := tn.r.Work().RetiringTasks(ctx)
	if err != nil {
		return in, fmt.Errorf("in use: read the retiring tasks: %w", err)
	}
	executors := map[string]string{} // executor id → app
	add := func(job string, ids []string) {
		j, err := tn.r.Config().Job(ctx, job)
		if err != nil {
			return // deregistered meanwhile
		}
		n := float64(len(ids))
		in = in.Add(namespace.Resources{CPUCount: j.CPUCount * n, MemoryMB: j.MemoryMB * n})
		for _, id := range ids {
			executors[id] = j.ExecutorApp()
		}
	}
	for job, items := range running {
		ids := make([]string, 0, len(items))
		for _, e := range items {
			ids = append(ids, e.ExecutorID)
		}
		add(job, ids)
	}
	for job, items := range retiring {
		ids := make([]string, 0, len(items))
		for _, r := range items {
			ids = append(ids, r.ExecutorID)
		}
		add(job, ids)
	}
	for _, appName := range executors {
		if jobs.IsHTTPApp(appName) {
			h := app.HTTPOnly()
			in = in.Add(namespace.Resources{CPUCount: h.CPUCount, MemoryMB: h.MemoryMB})
		} else if a, err := tn.r.Config().App(ctx, appName); err == nil {
			in = in.Add(namespace.Resources{CPUCount: a.CPUCount, MemoryMB: a.MemoryMB})
		}
	}
	return in, nil
}

package registry

import (
	"context"
	"fmt"

	"github.com/ejcloud/elasticjob/namespace"
)

// InUse is what the running tasks of r's namespace hold: each running
// shard its job's resources, and once per executor its app's (the same
// sum the launch round admits against the namespace's guarantee and
// limit). A job or app deregistered meanwhile counts nothing.
func (r *Registry) InUse(ctx context.Context) (namespace.Resources, error) {
	var in namespace.Resources
	running, err := r.RunningTasks(ctx)
	if err != nil {
		return in, fmt.Errorf("in use: read the running tasks: %w", err)
	}
	executors := map[string]string{} // executor id → app
	for job, items := range running {
		j, err := r.Job(ctx, job)
		if err != nil {
			continue // deregistered meanwhile
		}
		n := float64(len(items))
		in = in.Add(namespace.Resources{CPUCount: j.CPUCount * n, MemoryMB: j.MemoryMB * n})
		for _, e := range items {
			executors[e.ExecutorID] = j.ExecutorApp()
		}
	}
	for _, appName := range executors {
		if a, err := r.App(ctx, appName); err == nil {
			in = in.Add(namespace.Resources{CPUCount: a.CPUCount, MemoryMB: a.MemoryMB})
		}
	}
	return in, nil
}

package api

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
)

// places gives the request's namespace's waiting work its position and
// estimated start (deadline.Places), keyed by deadline.ReadyKey and
// FailoverKey of the namespace's own names. Estimates are best effort:
// what cannot be read leaves them out (nil), never fails the listing.
func (s *Server) places(ctx context.Context, ready []queue.Ready, failover []queue.Failover) map[string]deadline.Place {
	reg := s.regIn(ctx)
	running, err := reg.RunningTasks(ctx)
	if err != nil {
		return nil
	}
	all, err := reg.Jobs(ctx)
	if err != nil {
		return nil
	}
	cfg := make(map[string]jobs.Config, len(all))
	for _, c := range all {
		cfg[c.JobName] = c
	}
	ns := nsIn(ctx)
	st := deadline.State{Ready: ready, Failover: failover, Running: running}
	if rec, err := s.reg.Namespace(ctx, ns); err == nil {
		if c, ok := deadline.CapacityOf(rec); ok {
			st.Capacity = map[string]estimate.Res{namespace.Default: c} // the namespace's own view: its names are bare
		}
	}
	return deadline.Places(s.clock.Now(), st,
		func(job string) (jobs.Config, bool) { c, ok := cfg[job]; return c, ok },
		func(job string) estimate.Typical { return s.typicals.Get(ctx, namespace.Key(ns, job)) })
}

// placeFields adds a waiting execution's position and estimated start to
// its row.
func placeFields(row map[string]any, p deadline.Place, ok bool) {
	if !ok {
		return
	}
	row["position"] = p.Position
	if !p.EstimatedStart.IsZero() {
		row["estimatedStart"] = p.EstimatedStart.UTC().Truncate(time.Second)
	}
}

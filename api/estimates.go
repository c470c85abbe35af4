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
	if len(ready)+len(failover) > maxEstimated {
		return nil
	}
	reg := s.regIn(ctx)
	running, err := reg.RunningTasks(ctx)
	if err != nil {
		return nil
	}
	// only the jobs waiting or running are read (decoded once each)
	cfg := map[string]jobs.Config{}
	need := func(job string) {
		if _, ok := cfg[job]; !ok {
			if c, err := reg.Job(ctx, job); err == nil {
				cfg[job] = c
			}
		}
	}
	for _, r := range ready {
		need(r.Job)
	}
	for _, f := range failover {
		need(f.Job)
	}
	for job := range running {
		need(job)
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

// maxEstimated bounds the waiting entries a listing estimates: past it the
// rows carry no position or estimate (a console polling a backlog of
// 100,000 every 2 s would cost a core; the leader's watcher still measures
// its estimates).
const maxEstimated = 10_000

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

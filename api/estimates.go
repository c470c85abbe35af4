package api

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// places gives the request's namespace's waiting work its position and
// estimated start (deadline.Places), keyed by deadline.ReadyKey and
// FailoverKey of the namespace's own names. Estimates are best effort:
// what cannot be read leaves them out (nil), never fails the listing.
func (s *jobHandlers) places(ctx context.Context, ready []queue.Ready, failover []queue.Failover) map[string]deadline.Place {
	if len(ready)+len(failover) > maxEstimated {
		return nil
	}
	reg := s.regIn(ctx)
	running, err := reg.Work().RunningTasks(ctx)
	if err != nil {
		return nil
	}
	retiring, err := reg.Work().RetiringTasks(ctx)
	if err != nil {
		return nil
	}
	cfg := configsOf(ctx, reg, ready, failover, running, retiring)
	ns := nsIn(ctx)
	st := deadline.State{Ready: ready, Failover: failover, Running: running, Retiring: retiring}
	s.shareWithOthers(ctx, ns, &st)
	if st.Elsewhere != nil {
		ictx, cancel := context.WithTimeout(ctx, capacityTimeout)
		if agents, err := s.eng.Agents(ictx); err == nil {
			st.Cluster = deadline.ClusterOf(agents)
		}
		cancel()
	}
	return deadline.Places(s.clock.Now(), st,
		func(job string) (jobs.Config, bool) { c, ok := cfg[job]; return c, ok },
		func(job string) estimate.Typical { return s.typicals.Get(ctx, namespace.Key(ns, job)) })
}

// configsOf reads the configurations of the jobs waiting, running or
// retiring only (each decoded once); a job that cannot be read is left out.
func configsOf(ctx context.Context, reg *registry.Registry, ready []queue.Ready, failover []queue.Failover, running map[string]map[int]task.Entry,
	retiring map[string]map[int]registry.Retiring) map[string]jobs.Config {
	cfg := map[string]jobs.Config{}
	need := func(job string) {
		if _, ok := cfg[job]; !ok {
			if c, err := reg.Config().Job(ctx, job); err == nil {
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
	for job := range retiring {
		need(job)
	}
	return cfg
}

// shareWithOthers reads the other namespaces too: a namespace with no
// capacity of its own shares what the cluster leaves of their running
// work and guarantees (the rows are the request's namespace's alone, its
// names bare).
func (s *jobHandlers) shareWithOthers(ctx context.Context, ns string, st *deadline.State) {
	recs, err := s.reg.Tenancy().Namespaces(ctx)
	if err != nil {
		return
	}
	st.SetNamespaces(recs)
	bare := func(m map[string]estimate.Res) {
		if v, ok := m[ns]; ok {
			m[namespace.Default] = v // the namespace's own view: its names are bare
		}
		if ns != namespace.Default {
			delete(m, ns)
		}
	}
	bare(st.Capacity)
	bare(st.Guarantee)
	if w, ok := st.Weight[ns]; ok {
		st.Weight[namespace.Default] = w
	}
	if _, own := st.Capacity[namespace.Default]; own || s.eng == nil {
		return
	}
	st.Elsewhere = map[string]estimate.Res{}
	others := []string{namespace.Default} // it may have no record
	for _, rec := range recs {
		others = append(others, rec.Name)
	}
	for _, o := range others {
		if _, seen := st.Elsewhere[o]; seen || o == ns {
			continue
		}
		if in, err := s.reg.In(o).Tenancy().InUse(ctx); err == nil {
			st.Elsewhere[o] = estimate.Res{CPUs: in.CPUCount, MemMB: in.MemoryMB}
		}
	}
}

// maxEstimated bounds the waiting entries a listing estimates: past it the
// rows carry no position or estimate (a console polling a backlog of
// 100,000 every 2 s would cost a core; the leader's watcher still measures
// its estimates).
const maxEstimated = 10_000

// placeFields adds a waiting execution's position and estimated start to
// its row. Work that can never fit (never_fits: larger than the whole
// cluster) gets no estimate: it starts only once the cluster grows, never
// "now" (the estimator, seeing nothing ahead of it, would say now and
// move it on every refresh).
func placeFields(row map[string]any, p deadline.Place, ok, neverFits bool) {
	if !ok {
		return
	}
	row["position"] = p.Position
	if !p.EstimatedStart.IsZero() && !neverFits {
		row["estimatedStart"] = p.EstimatedStart.UTC().Truncate(time.Second)
	}
}

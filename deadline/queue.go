package deadline

import (
	"fmt"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// Place is a waiting execution's place in its namespace's order and its
// estimated start.
type Place struct {
	Namespace string `json:"namespace"`
	// Position counts from 1 in the namespace's order: failed shards
	// waiting to run again first, then executions, oldest first (the
	// launch round's order within a namespace).
	Position int `json:"position"`
	// EstimatedStart is when it is expected to start (zero: not known,
	// no running work ahead of it has an expected end): see estimate.Starts.
	EstimatedStart time.Time `json:"estimatedStart,omitzero"`
}

// Typicals returns what a job's recent runs took (by registry key).
type Typicals func(job string) estimate.Typical

// State is what the registry holds of the queues and the running work.
type State struct {
	Ready    []queue.Ready
	Failover []queue.Failover
	Running  map[string]map[int]task.Entry
	// Retiring are the old tasks of DAEMON shards moving with a declared
	// overlap (job → shard → its record). Each holds its resources beside
	// the running work: until its overlap ends (StartBy) when its
	// replacement is launched, since one of the shard's two tasks stops by
	// then (the old one once the new one runs, else the new one as the
	// move is given up); until its replacement starts when that still
	// waits (the job's ready entry, which frees it then).
	Retiring map[string]map[int]registry.Retiring
	// Capacity is what each namespace may hold (CapacityOf its record):
	// its waiting work may take now what its running work leaves of it. A
	// namespace not in it is taken to have nothing free now (it waits:
	// what it needs is not free).
	Capacity map[string]estimate.Res
	// Cluster is the engine's agents' total (zero: not known). With it, a
	// namespace with no capacity of its own draws on what the cluster
	// leaves: its total less every namespace's running work and the unused
	// part of every guarantee, shared with the other such namespaces as
	// the launch round lends (estimate.StartsShared, by Weight).
	Cluster estimate.Res
	// Guarantee and Weight are the namespaces' guarantees and weights (by
	// name; SetNamespaces fills them with Capacity).
	Guarantee map[string]estimate.Res
	Weight    map[string]float64
	// Elsewhere is what namespaces run beyond Running (by name): a view
	// that reads one namespace's tasks counts the others' in use here,
	// held with no expected end.
	Elsewhere map[string]estimate.Res
}

// SetNamespaces fills st's Capacity, Guarantee and Weight from the
// namespaces' records.
func (st *State) SetNamespaces(recs []namespace.Record) {
	st.Capacity = map[string]estimate.Res{}
	st.Guarantee = map[string]estimate.Res{}
	st.Weight = map[string]float64{}
	for _, rec := range recs {
		if c, ok := CapacityOf(rec); ok {
			st.Capacity[rec.Name] = c
		}
		if g := rec.Guarantee; g != nil {
			st.Guarantee[rec.Name] = estimate.Res{CPUs: g.CPUCount, MemMB: g.MemoryMB}
		}
		if rec.Weight > 0 {
			st.Weight[rec.Name] = rec.Weight
		}
	}
}

// ClusterOf is the agents' total.
func ClusterOf(agents []engine.Agent) estimate.Res {
	var r estimate.Res
	for _, a := range agents {
		r.CPUs += a.CPUs
		r.MemMB += a.MemMB
	}
	return r
}

// CapacityOf is what a namespace may hold, as the estimate counts it: its
// limit, else its guarantee (ok false: neither is set).
func CapacityOf(rec namespace.Record) (estimate.Res, bool) {
	r := rec.Limit
	if r == nil {
		r = rec.Guarantee
	}
	if r == nil {
		return estimate.Res{}, false
	}
	return estimate.Res{CPUs: r.CPUCount, MemMB: r.MemoryMB}, true
}

// freeOf is what cap leaves once running holds its share (none below 0).
func freeOf(cap estimate.Res, ok bool, running []estimate.Holding) estimate.Res {
	if !ok {
		return estimate.Res{}
	}
	for _, h := range running {
		cap.CPUs -= h.Holds.CPUs
		cap.MemMB -= h.Holds.MemMB
	}
	return estimate.Res{CPUs: max(cap.CPUs, 0), MemMB: max(cap.MemMB, 0)}
}

// ReadyKey and FailoverKey name a waiting execution in Places' result.
func ReadyKey(job string) string              { return job }
func FailoverKey(job string, item int) string { return fmt.Sprintf("%s#%d", job, item) }

// Places gives every waiting execution (by ReadyKey or FailoverKey) its
// position in its namespace and an estimated start: each namespace is
// estimated on its own from its own running work's expected ends
// (estimate.End: the job's p90, else its timeout), from what its capacity
// leaves free now (st.Capacity). Namespaces with no capacity of their own
// share what the cluster leaves (st.Cluster; nothing free when not known).
// A ready entry holding several executions is placed by its oldest.
func Places(now time.Time, st State, cfg Jobs, typ Typicals) map[string]Place {
	out := map[string]Place{}
	eachPlace(now, st, cfg, typ, func(it *waitingItem, p Place) {
		out[it.key()] = p
	})
	return out
}

// eachPlace computes Places and hands each waiting execution's to fn as
// it goes, with no map of them all (the watcher's pass over a backlog).
func eachPlace(now time.Time, st State, cfg Jobs, typ Typicals, fn func(it *waitingItem, p Place)) {
	byNS := waitingByNamespace(st, cfg, typ)
	holding := holdingByNamespace(st, cfg, typ)
	place := func(ns string, items []waitingItem, starts []time.Time) {
		for i := range items {
			it := &items[i]
			est := starts[i]
			if nl := clock.FromUnixNano(it.notLater); !est.IsZero() && nl.After(est) {
				est = nl
			}
			fn(it, Place{Namespace: ns, Position: i + 1, EstimatedStart: est})
		}
	}
	shared := st.Cluster.CPUs > 0 || st.Cluster.MemMB > 0
	var pool []string // namespaces drawing on what the cluster leaves
	var entries []estimate.Entry
	for ns, items := range byNS {
		sort.SliceStable(items, func(i, j int) bool { return items[i].before(items[j]) })
		cap, ok := st.Capacity[ns]
		if !ok && shared {
			pool = append(pool, ns)
			continue
		}
		entries = entries[:0]
		for _, it := range items {
			entries = append(entries, it.entry)
		}
		place(ns, items, estimate.Starts(now, freeOf(cap, ok, holding[ns]), holding[ns], entries))
	}
	if len(pool) == 0 {
		return
	}
	// oldest waiting work first among equal shares
	sort.Slice(pool, func(i, j int) bool {
		a, b := byNS[pool[i]][0], byNS[pool[j]][0]
		if a.failover() != b.failover() || a.since != b.since {
			return a.before(b)
		}
		return pool[i] < pool[j]
	})
	groups := make([]estimate.Group, len(pool))
	for g, ns := range pool {
		groups[g] = estimate.Group{Weight: st.Weight[ns], Running: holding[ns]}
		for _, it := range byNS[ns] {
			groups[g].Waiting = append(groups[g].Waiting, it.entry)
		}
	}
	starts := estimate.StartsShared(now, poolFree(st, holding), st.Cluster, groups)
	for g, ns := range pool {
		place(ns, byNS[ns], starts[g])
	}
}

// holdingByNamespace is what every running shard of a known job holds and
// when it is expected to end, by namespace, and every retiring task
// (State.Retiring) with the end of its overlap, or none of its own when
// its replacement still waits (its start frees it: waitingByNamespace).
func holdingByNamespace(st State, cfg Jobs, typ Typicals) map[string][]estimate.Holding {
	holding := map[string][]estimate.Holding{}
	for job, shards := range st.Running {
		c, ok := cfg(job)
		if !ok {
			continue
		}
		t := typ(job)
		for _, e := range shards {
			end, _ := estimate.End(e.LaunchedAt, t, time.Duration(c.TimeoutSeconds)*time.Second)
			holding[namespace.Of(job)] = append(holding[namespace.Of(job)], estimate.Holding{
				Holds: estimate.Res{CPUs: c.CPUCount, MemMB: c.MemoryMB}, End: end})
		}
	}
	for job, shards := range st.Retiring {
		c, ok := cfg(job)
		if !ok {
			continue
		}
		for item, r := range shards {
			h := estimate.Holding{Holds: estimate.Res{CPUs: c.CPUCount, MemMB: c.MemoryMB}}
			if _, launched := st.Running[job][item]; launched {
				h.End = r.StartBy
			}
			holding[namespace.Of(job)] = append(holding[namespace.Of(job)], h)
		}
	}
	return holding
}

// poolFree is what the namespaces without a capacity of their own share:
// the cluster less all running work and the unused part of every
// guarantee (kept for its namespace's own work), none below 0.
func poolFree(st State, holding map[string][]estimate.Holding) estimate.Res {
	free := st.Cluster
	take := func(r estimate.Res) { free.CPUs -= r.CPUs; free.MemMB -= r.MemMB }
	for _, hs := range holding {
		for _, h := range hs {
			take(h.Holds)
		}
	}
	for _, r := range st.Elsewhere {
		take(r)
	}
	for ns, g := range st.Guarantee {
		used := st.Elsewhere[ns]
		for _, h := range holding[ns] {
			used.CPUs += h.Holds.CPUs
			used.MemMB += h.Holds.MemMB
		}
		take(estimate.Res{CPUs: max(g.CPUs-used.CPUs, 0), MemMB: max(g.MemMB-used.MemMB, 0)})
	}
	return estimate.Res{CPUs: max(free.CPUs, 0), MemMB: max(free.MemMB, 0)}
}

// expectedRun is how long a queued run of c is expected to take once it
// starts: its median, the typical run (a chain of p90s would put a deep
// queue's starts later by the p90's margin over the typical run at every
// link: docs/benchmarks.md, "Start estimates"), else its timeout (zero:
// not known). Running work ends at its p90 (estimate.End), as the wait
// reasons say.
func expectedRun(c jobs.Config, t estimate.Typical) time.Duration {
	if t.Known {
		return t.Median
	}
	return time.Duration(c.TimeoutSeconds) * time.Second
}

package deadline

import (
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// waitingItem is one waiting execution as Places orders and estimates it
// (64 bytes: the instants as UnixNano, the item a failover's shard).
type waitingItem struct {
	job      string
	item     int // a failover's shard; -1: a ready entry
	since    int64
	notLater int64 // 0: none
	entry    estimate.Entry
}

// failover is whether it is a failed shard waiting to run again.
func (a *waitingItem) failover() bool { return a.item >= 0 }

// key is its ReadyKey or FailoverKey.
func (a *waitingItem) key() string {
	if a.failover() {
		return FailoverKey(a.job, a.item)
	}
	return ReadyKey(a.job)
}

// before orders a namespace's waiting work: failovers first, then the
// oldest, then by key.
func (a waitingItem) before(b waitingItem) bool {
	if a.failover() != b.failover() {
		return a.failover()
	}
	if a.since != b.since {
		return a.since < b.since
	}
	return a.key() < b.key()
}

// waitingByNamespace is every waiting execution of a known job, by its
// namespace: failovers one shard each, a ready entry all its shards, or a
// DAEMON job's the shards not running (as the launch round launches them),
// which free the old tasks of those moving with an overlap as they start
// (State.Retiring).
func waitingByNamespace(st State, cfg Jobs, typ Typicals) map[string][]waitingItem {
	size := map[string]int{} // each namespace's list made once, to its length
	for _, f := range st.Failover {
		size[namespace.Of(f.Job)]++
	}
	for _, r := range st.Ready {
		size[namespace.Of(r.Job)]++
	}
	byNS := make(map[string][]waitingItem, len(size))
	for ns, n := range size {
		byNS[ns] = make([]waitingItem, 0, n)
	}
	for _, f := range st.Failover {
		c, ok := cfg(f.Job)
		if !ok {
			continue
		}
		byNS[namespace.Of(f.Job)] = append(byNS[namespace.Of(f.Job)], waitingItem{f.Job, f.Item, clock.UnixNano(f.Since), clock.UnixNano(f.NotBefore),
			estimate.Entry{Needs: estimate.Res{CPUs: c.CPUCount, MemMB: c.MemoryMB}, Run: expectedRun(c, typ(f.Job))}})
	}
	for _, r := range st.Ready {
		c, ok := cfg(r.Job)
		if !ok {
			continue
		}
		n, moving := readyShards(c, st.Running[r.Job], st.Retiring[r.Job])
		byNS[namespace.Of(r.Job)] = append(byNS[namespace.Of(r.Job)], waitingItem{r.Job, -1, clock.UnixNano(r.Since), clock.UnixNano(r.NotBefore),
			estimate.Entry{Needs: estimate.Res{CPUs: c.CPUCount * n, MemMB: c.MemoryMB * n}, Run: expectedRun(c, typ(r.Job)),
				Frees: estimate.Res{CPUs: c.CPUCount * moving, MemMB: c.MemoryMB * moving}}})
	}
	for ns, items := range byNS {
		if len(items) == 0 {
			delete(byNS, ns) // only work of unknown jobs
		}
	}
	return byNS
}

// readyShards is how many shards a ready entry of c launches: all of them,
// or a DAEMON job's that are not running when some are; and how many of
// those are moving with an overlap (a retiring task stands for the shard
// until its replacement starts).
func readyShards(c jobs.Config, running map[int]task.Entry, retiring map[int]registry.Retiring) (n, moving float64) {
	if c.JobExecutionType != jobs.Daemon || len(running) == 0 && len(retiring) == 0 {
		return float64(c.ShardingTotalCount), 0
	}
	for i := range c.ShardingTotalCount {
		if _, busy := running[i]; busy {
			continue
		}
		n++
		if _, ok := retiring[i]; ok {
			moving++
		}
	}
	if n == 0 {
		return float64(c.ShardingTotalCount), 0 // nothing to launch: the round says why it waits
	}
	return n, moving
}

package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/store"
)

// WaitingPath holds why queued work has not launched: the leader records,
// for each ready entry and failover shard that waited longer than a
// moment, the reason it computed in its launch rounds, so every instance
// (and operators' tools) can show it. /state/waiting/ready/{job} and
// /state/waiting/failover/{job}/{job}@-@{item}.
const WaitingPath = "/state/waiting"

// Reasons work waits for (Waiting.Reason).
const (
	WaitNoOffers      = "no_offers"              // no resource offers held (Mesos has none, or is being asked)
	WaitCPU           = "insufficient_cpu"       // no offer has enough CPU for a shard
	WaitMem           = "insufficient_mem"       // no offer has enough memory for a shard
	WaitResources     = "insufficient_resources" // CPU and memory are on different agents
	WaitGang          = "gang_does_not_fit"      // the READY execution's shards do not fit together
	WaitBehind        = "behind_older_work"      // older queued work already asks for more than the offers held
	WaitTooLarge      = "never_fits"             // a shard is larger than any agent ever offered
	WaitJobDisabled   = "job_disabled"
	WaitAppDisabled   = "app_disabled"
	WaitRunning       = "execution_running" // a job never runs two executions at once
	WaitFailover      = "failover_pending"  // failed shards of the job re-run first
	WaitBackoff       = "backing_off"       // a retry waits for its backoff
	WaitStaged        = "staged"            // a cron fire committed ahead of its instant
	WaitReconciling   = "reconciling"       // a new leader confirms running tasks first
	WaitNotSubscribed = "not_subscribed"    // no subscription to Mesos at the moment
)

// Waiting is why one queue entry has not launched.
type Waiting struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"` // in words, with the figures
	Since   time.Time `json:"since"`   // waiting (for any reason) since
	Until   time.Time `json:"until,omitzero"`
}

// WaitingKey names the entry of a ready job or a failover shard.
func WaitingKey(kind, job string, item int) string {
	if kind == "failover" {
		return "failover/" + job + "/" + jobs.MetaKey(job, item)
	}
	return "ready/" + job
}

// PutWaitingOp records why an entry waits.
func PutWaitingOp(key string, w Waiting) store.Op {
	return store.Put(WaitingPath+"/"+key, mustJSON(w))
}

// DeleteWaitingOp forgets an entry's reason.
func DeleteWaitingOp(key string) store.Op { return store.Delete(WaitingPath+"/"+key, store.AnyVersion) }

// waitingDeleteOps forget every reason of a job (with its queues).
func waitingDeleteOps(job string) []store.Op {
	return []store.Op{DeleteWaitingOp("ready/" + job), DeleteWaitingOp("failover/" + job)}
}

// WaitingReasons reads every recorded reason: key (WaitingKey) → reason.
func (r *Registry) WaitingReasons(ctx context.Context) (map[string]Waiting, error) {
	out := map[string]Waiting{}
	dirs := []string{WaitingPath + "/ready"}
	jobsWaiting, err := r.kv.Children(ctx, WaitingPath+"/failover")
	if err != nil {
		return nil, err
	}
	for _, j := range jobsWaiting {
		dirs = append(dirs, WaitingPath+"/failover/"+j)
	}
	for _, dir := range dirs {
		nodes, err := r.kv.List(ctx, dir)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if len(n.Value) == 0 {
				continue // a job's directory of failover shards
			}
			var w Waiting
			if err := json.Unmarshal(n.Value, &w); err != nil {
				return nil, fmt.Errorf("registry: decode %s: %w", n.Path, err)
			}
			out[strings.TrimPrefix(n.Path, WaitingPath+"/")] = w
		}
	}
	return out, nil
}

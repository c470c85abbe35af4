package registry

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
)

// waitingPath holds why queued work has not launched: the leader records,
// for each ready entry and failover shard that waited longer than a
// moment, the reason it computed in its launch rounds, so every instance
// (and operators' tools) can show it. /state/waiting/ready/{job} and
// /state/waiting/failover/{job}/{job}@-@{item}.
const waitingPath = "/state/waiting"

// putWaitingOp records why an entry waits.
func putWaitingOp(key string, w queue.Wait) store.Op {
	return putJSON(waitingPath+"/"+key, w)
}

// deleteWaitingOp forgets an entry's reason.
func deleteWaitingOp(key string) store.Op { return store.Delete(waitingPath+"/"+key, store.AnyVersion) }

// waitingDeleteOps forget every reason of a job (with its queues).
func waitingDeleteOps(job string) []store.Op {
	return []store.Op{deleteWaitingOp("ready/" + job), deleteWaitingOp("failover/" + job)}
}

// WaitingReasons reads every recorded reason: key (queue.WaitKey) → reason.
func (wk Work) WaitingReasons(ctx context.Context) (map[string]queue.Wait, error) {
	out := map[string]queue.Wait{}
	dirs := []string{waitingPath + "/ready"}
	jobsWaiting, err := wk.r.kv.Children(ctx, waitingPath+"/failover")
	if err != nil {
		return nil, err
	}
	for _, j := range jobsWaiting {
		dirs = append(dirs, waitingPath+"/failover/"+j)
	}
	for _, dir := range dirs {
		nodes, err := wk.r.kv.List(ctx, dir)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if len(n.Value) == 0 {
				continue // a job's directory of failover shards
			}
			var w queue.Wait
			if err := decodeAt(n.Path, n.Value, &w); err != nil {
				wk.r.setAside(n, err)
				continue
			}
			out[strings.TrimPrefix(n.Path, waitingPath+"/")] = w
		}
	}
	return out, nil
}

// WaitingOf reads one entry's recorded reason (ok false: none).
func (wk Work) WaitingOf(ctx context.Context, key string) (queue.Wait, bool, error) {
	n, err := wk.r.kv.Get(ctx, waitingPath+"/"+key)
	if errors.Is(err, store.ErrNotFound) {
		return queue.Wait{}, false, nil
	}
	if err != nil {
		return queue.Wait{}, false, err
	}
	var w queue.Wait
	if err := json.Unmarshal(n.Value, &w); err != nil {
		return queue.Wait{}, false, decodeErr(n.Path, err)
	}
	return w, true, nil
}

package registry

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
)

// RetiringPath holds the old task of a DAEMON shard whose move to another cluster
// overlaps (jobs.Config.MoveOverlapSeconds): /state/retiring/{job}/{job}@-@{item}. It is
// a root of its own, not a second entry under RunningPath, so that every reader of the
// running entries (the launch round, the capacities, history, the API's counts) still
// sees one task per shard; only the readers that mean to see the retiring task read it.
const RetiringPath = "/state/retiring"

// Retiring is a DAEMON shard's old task while its replacement starts on another cluster:
// it runs on until the new task reports RUNNING (then it is killed) or until StartBy
// (then the new one is given up and this one is the shard's running entry again).
type Retiring struct {
	task.Entry
	// Since is when the move began (the entry left /state/running).
	Since time.Time `json:"retiringSince"`
	// StartBy bounds the overlap's start: the new task must run by then.
	StartBy time.Time `json:"startBy"`
}

func retiringPathOf(job string, item int) string {
	return RetiringPath + "/" + job + "/" + jobs.MetaKey(job, item)
}

// Retire moves a shard's running entry e (conditional on its version) to the retiring
// root and queues the job again (a DAEMON's relaunch), in the change's one commit: the
// round then launches the shard anew while the old task runs on.
func (c *Change) Retire(ctx context.Context, job string, item int, e task.Entry, since, startBy time.Time) error {
	op, changed, err := c.r.triggerOp(ctx, job, queue.Trigger{At: since, By: ByDaemon})
	if err != nil {
		return err
	}
	c.ops = append(c.ops, putJSON(retiringPathOf(job, item), Retiring{Entry: e, Since: since.UTC(), StartBy: startBy.UTC()}))
	if changed {
		c.ops = append(c.ops, op...)
	}
	c.ops = append(c.ops, store.Delete(runningPathOf(job, item), e.Version))
	return nil
}

// Retired removes a retiring task's record (it ended), conditional on its version.
func (c *Change) Retired(job string, item int, version int64) *Change {
	c.ops = append(c.ops, store.Delete(retiringPathOf(job, item), version))
	return c
}

// Reinstate makes a retiring task its shard's running entry again (its replacement did
// not start in time): the record goes, conditional on its version, and the running entry
// is written over the replacement's (conditional on its version), or created when there
// is none (replaced nil).
func (c *Change) Reinstate(job string, item int, r Retiring, replaced *task.Entry) *Change {
	e := r.Entry
	e.Version = 0
	if replaced != nil {
		c.ops = append(c.ops, setJSON(runningPathOf(job, item), e, replaced.Version))
	} else {
		c.ops = append(c.ops, createJSON(runningPathOf(job, item), e))
	}
	c.ops = append(c.ops, store.Delete(retiringPathOf(job, item), r.Version))
	return c
}

// RetiringTasks lists every retiring task: job → item → record.
func (wk Work) RetiringTasks(ctx context.Context) (map[string]map[int]Retiring, error) {
	names, err := wk.r.kv.Children(ctx, RetiringPath)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int]Retiring, len(names))
	for _, job := range names {
		m, err := wk.RetiringOf(ctx, job)
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out[job] = m
		}
	}
	return out, nil
}

// RetiringOf lists one job's retiring tasks by item.
func (wk Work) RetiringOf(ctx context.Context, job string) (map[int]Retiring, error) {
	nodes, err := wk.r.kv.List(ctx, RetiringPath+"/"+job)
	if err != nil {
		return nil, err
	}
	out := make(map[int]Retiring, len(nodes))
	for _, n := range nodes {
		_, item, err := jobs.ParseMetaKey(lastSegment(n.Path))
		if err != nil || len(n.Value) == 0 {
			continue
		}
		var r Retiring
		if err := decodeAt(n.Path, n.Value, &r); err != nil {
			wk.r.setAside(n, err)
			continue
		}
		r.Version = n.Version
		out[item] = r
	}
	return out, nil
}

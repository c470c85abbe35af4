package round

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// The queues turned into candidates: the entries that may launch this
// round, each with its shape; every other entry gets its reason here.

// cand is a queue entry that may launch this round: a ready execution or
// a failover shard of a runnable job. It is kept small (a backlog of
// 100,000 entries makes as many): the job's configuration is looked up
// again only for what launches.
type cand struct {
	key   string
	job   string
	ready *queue.Ready
	fail  *queue.Failover
	items []int // the shards to launch (nil: every shard of the job)
	sh    shape
	ns    *nsState // its namespace
	class int      // within its namespace's guarantee, or borrowing
	// pc is where its namespace's per-cluster capacities put it (clusters.go; nil: they
	// do not, as for every entry of a namespace without them).
	pc *clusterPick
}

// clusterPick is where per-cluster capacities put an entry: guarOn, the cluster whose
// guarantee of its namespace it is within ("": the global one, or it borrows), and on,
// the clusters it may be placed on this round when they narrow its policy's (nil: all).
type clusterPick struct {
	guarOn string
	on     []string
}

func (c *cand) guarOn() string {
	if c.pc == nil {
		return ""
	}
	return c.pc.guarOn
}

// on is the clusters c may be placed on this round when its namespace narrowed its
// policy's (nil: all of them).
func (c *cand) on() []string {
	if c.pc == nil {
		return nil
	}
	return c.pc.on
}

func (c *cand) setGuarOn(cl string) {
	if c.pc == nil {
		if cl == "" {
			return
		}
		c.pc = &clusterPick{}
	}
	c.pc.guarOn = cl
}

func (c *cand) kind() offers.Kind { return c.sh.kind }

// count is how many shards the entry launches.
func (c *cand) count() int { return c.sh.n }

func (c *cand) shape() shape { return c.sh }

// requests are the entry's shards as the matcher takes them.
func (c *cand) requests() []offers.Request {
	out := make([]offers.Request, c.sh.n)
	seq := c.since().UnixNano()
	for i := range out {
		item := i
		switch {
		case c.fail != nil:
			item = c.fail.Item
		case c.items != nil:
			item = c.items[i]
		}
		out[i] = offers.Request{Job: c.job, Shard: item, Kind: c.sh.kind, App: c.sh.app, Task: c.sh.task, Executor: c.sh.exec, Seq: seq}
	}
	return out
}

func (c *cand) since() time.Time {
	if c.fail != nil {
		return c.fail.Since
	}
	return c.ready.Since
}

// shape is what decides whether an entry fits: two entries of one shape
// fit, or do not fit, alike.
type shape struct {
	app        string
	kind       offers.Kind
	n          int
	task, exec offers.Resources
	clusters   policyID // where it may run (policyKey; noPolicy: anywhere, one engine)
}

func shapeOf(job jobs.Config, a app.Config, kind offers.Kind, n int) shape {
	return shape{app: a.AppName, kind: kind, n: n,
		task: offers.Resources{CPU: offers.CPUs(job.CPUCount), MemMB: offers.MemMB(job.MemoryMB)},
		exec: offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)}}
}

// classify turns the failover shards and the first n ready entries into
// candidates, and gives every other entry among them its reason (or marks
// it for removal). The ready entries after n are the round's rest
// (rest.go), classified once the round is settled.
func (d *decider) classify(n int) {
	v := d.v
	d.cands = make([]cand, 0, n+len(v.Failover))
	d.pendingFailover = make(map[string]bool, len(v.Failover))
	for i := range v.Failover {
		f := &v.Failover[i]
		d.pendingFailover[f.Job] = true
		key := queue.WaitKey(true, f.Job, f.Item)
		job, a, why := v.Jobs.Lookup(f.Job)
		switch {
		case why != jobs.Runnable:
			d.notRunnable(key, Stale{Job: f.Job, Item: f.Item, Fail: true}, job, why)
		case f.Item >= job.ShardingTotalCount: // the job was resharded
			d.plan.Remove = append(d.plan.Remove, Stale{Job: f.Job, Item: f.Item, Fail: true})
		case running(v, f.Job, f.Item):
			if d.unconfirmed(f.Job) > 0 {
				d.waitUntil(key, queue.WaitReconciling, fmt.Sprintf("shard %d of the job is recorded as running: %s", f.Item, d.confirming()), v.ReconcileUntil)
				continue
			}
			d.wait(key, queue.WaitRunning, fmt.Sprintf("shard %d of the job is still running", f.Item))
		case f.NotBefore.After(v.Now):
			d.waitUntil(key, queue.WaitBackoff, "the retry waits for its backoff until "+fmtUntil(f.NotBefore), f.NotBefore)
		default:
			sh := shapeOf(job, a, offers.Failover, 1)
			sh.clusters = d.policyKey(f.Job, job.Clusters, job.SpreadClusters)
			d.cands = append(d.cands, cand{key: key, job: f.Job, fail: f, sh: sh})
		}
	}
	for _, rd := range v.Ready[:n] {
		if c, ok := d.classifyReady(rd); ok {
			d.cands = append(d.cands, c)
		}
	}
}

// classifyReady turns a ready entry into a candidate (ok), or gives it
// its reason (or marks it for removal).
func (d *decider) classifyReady(rd *queue.Ready) (c cand, ok bool) {
	v := d.v
	key := queue.WaitKey(false, rd.Job, 0)
	job, a, why := v.Jobs.Lookup(rd.Job)
	if why != jobs.Runnable {
		d.notRunnable(key, Stale{Job: rd.Job}, job, why)
		return cand{}, false
	}
	if v.CatchingUp[rd.Job] {
		d.wait(key, queue.WaitStaged, "the cron fires it missed while no leader fired are being queued (the new leader's catch-up): it launches with them")
		return cand{}, false
	}
	if until := StagedUntil(rd); until.After(v.Now) { // a cron fire staged ahead of its instant
		d.waitUntil(key, queue.WaitStaged, "a cron fire held until its instant "+fmtUntil(until), until)
		return cand{}, false
	}
	items, ok := toLaunch(job, v.Running[rd.Job])
	if n := len(v.Running[rd.Job]); !ok || d.pendingFailover[rd.Job] { // never two executions of a job at once
		switch u := d.unconfirmed(rd.Job); {
		case u > 0:
			d.waitUntil(key, queue.WaitReconciling, "the job's previous execution is recorded as running ("+plural(n, "shard")+"): "+d.confirming(), v.ReconcileUntil)
		case n > 0:
			d.wait(key, queue.WaitRunning, "the job's previous execution is still running ("+plural(n, "shard")+")")
		default:
			d.wait(key, queue.WaitFailover, "failed shards of the job run again first")
		}
		return cand{}, false
	}
	n := job.ShardingTotalCount
	if items != nil {
		n = len(items)
	}
	d.plan.Depth++
	sh := shapeOf(job, a, offers.Ready, n)
	sh.clusters = d.policyKey(rd.Job, job.Clusters, job.SpreadClusters)
	return cand{key: key, job: rd.Job, ready: rd, items: items, sh: sh}, true
}

// unconfirmed counts the job's tasks recorded as running whose state the
// engine has not confirmed yet (View.Unconfirmed), while launching waits
// for them.
func (d *decider) unconfirmed(job string) int {
	if len(d.v.Unconfirmed) == 0 || !d.v.Now.Before(d.v.ReconcileUntil) {
		return 0
	}
	n := 0
	for _, e := range d.v.Running[job] {
		if d.v.Unconfirmed[e.TaskID] {
			n++
		}
	}
	return n
}

// confirming words the wait for the engine's confirmation.
func (d *decider) confirming() string {
	return fmt.Sprintf("its launch waits until the engine has confirmed the tasks recorded as running (%d not yet, at most until %s)",
		len(d.v.Unconfirmed), fmtUntil(d.v.ReconcileUntil))
}

func running(v View, job string, item int) bool {
	_, ok := v.Running[job][item]
	return ok
}

// toLaunch: a transient job launches all its shards when none runs
// (items nil); a daemon job launches the shards that are not running.
// ok is false when there is nothing to launch.
func toLaunch(job jobs.Config, run map[int]task.Entry) (items []int, ok bool) {
	if len(run) == 0 {
		return nil, true
	}
	if job.JobExecutionType == jobs.Transient {
		return nil, false
	}
	for i := range job.ShardingTotalCount {
		if _, busy := run[i]; !busy {
			items = append(items, i)
		}
	}
	return items, len(items) > 0
}

// notRunnable gives the reason of an entry of a job that may not run; an
// entry of a job that is gone is to be dropped.
func (d *decider) notRunnable(key string, s Stale, job jobs.Config, why jobs.Runnability) {
	switch why {
	case jobs.JobMissing:
		d.plan.Drop = append(d.plan.Drop, s)
	case jobs.JobDisabled:
		d.wait(key, queue.WaitJobDisabled, "the job is disabled")
	default:
		d.wait(key, queue.WaitAppDisabled, fmt.Sprintf("the job's app %s is disabled or missing", job.AppName))
	}
}

// StagedUntil is when rd's next execution may launch at the earliest: a
// new entry's NotBefore, or the cron instant the next execution serves (a
// fire the producer staged ahead into an entry that had executions
// pending already: it has no NotBefore of its own, and it must not start
// before its instant once those ahead of it have launched).
func StagedUntil(rd *queue.Ready) time.Time {
	until := rd.NotBefore
	if n := rd.FirstNominal(); n.After(until) {
		until = n
	}
	return until
}

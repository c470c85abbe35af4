package round

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// Decide decides one launch round (the package documentation has the
// policy).
func Decide(v View) Plan {
	waiting := v.Scratch
	if waiting == nil {
		waiting = make(map[string]Wait, len(v.Ready)+len(v.Failover))
	}
	clear(waiting)
	d := &decider{v: v, plan: Plan{Waiting: waiting}}
	d.classify()
	switch {
	case !v.Connected:
		d.waitAll(WaitNotSubscribed, "the scheduler is not subscribed to its cluster engine at the moment (it re-subscribes with backoff)")
	case v.Reconciling > 0 && v.Now.Before(v.ReconcileUntil):
		d.waitAll(WaitReconciling, fmt.Sprintf("launching waits until the engine has confirmed the %d tasks recorded as running (at most until %s)",
			v.Reconciling, fmtUntil(v.ReconcileUntil)))
		d.wakeAt(v.ReconcileUntil)
	default:
		d.place()
	}
	return d.plan
}

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
}

func shapeOf(job jobs.Config, a app.Config, kind offers.Kind, n int) shape {
	return shape{app: a.AppName, kind: kind, n: n,
		task: offers.Resources{CPU: offers.CPUs(job.CPUCount), MemMB: offers.MemMB(job.MemoryMB)},
		exec: offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)}}
}

type decider struct {
	v       View
	plan    Plan
	cands   []cand
	cluster emptyCluster    // the empty cluster: every agent's total (fit.go)
	never   map[shape]*Wait // the never_fits wait of each shape seen (nil: it fits)
	occ     occupancy       // what the running work holds where (running.go, holders.go)
	ns      spaces          // the namespaces (capacity.go, order.go, limits.go, lending.go, preempt.go)
	// offs are the resources the round matches on: the offers held, or,
	// with none held (estimated), what the agents have free by the
	// running tasks' count, to say why work waits but launch nothing.
	offs      []offers.Offer
	estimated bool

	// the round's progress (place)
	m        *offers.Matcher
	failed   map[shape]Wait // the wait of a shape that did not fit
	launched []*cand
	holder   *cand // the reservation's
	placedN  int
	stopped  bool
	capped   string
}

func (d *decider) wait(key, reason, msg string) {
	d.plan.Waiting[key] = Wait{Reason: reason, Message: msg}
}

func (d *decider) waitUntil(key, reason, msg string, until time.Time) {
	d.plan.Waiting[key] = Wait{Reason: reason, Message: msg, Until: until}
	d.wakeAt(until)
}

func (d *decider) wakeAt(t time.Time) {
	if d.plan.WakeAt.IsZero() || t.Before(d.plan.WakeAt) {
		d.plan.WakeAt = t
	}
}

// waitAll gives every candidate the same reason: no round happened.
func (d *decider) waitAll(reason, msg string) {
	for _, c := range d.cands {
		d.wait(c.key, reason, msg)
	}
}

// classify turns the queues into candidates, and gives every other entry
// its reason (or marks it for removal).
func (d *decider) classify() {
	v := d.v
	d.cands = make([]cand, 0, len(v.Ready)+len(v.Failover))
	pendingFailover := make(map[string]bool, len(v.Failover))
	for i := range v.Failover {
		f := &v.Failover[i]
		pendingFailover[f.Job] = true
		key := WaitKey(true, f.Job, f.Item)
		job, a, why := v.Jobs.Lookup(f.Job)
		switch {
		case why != jobs.Runnable:
			d.notRunnable(key, Stale{Job: f.Job, Item: f.Item, Fail: true}, job, why)
		case f.Item >= job.ShardingTotalCount: // the job was resharded
			d.plan.Remove = append(d.plan.Remove, Stale{Job: f.Job, Item: f.Item, Fail: true})
		case running(v, f.Job, f.Item):
			d.wait(key, WaitRunning, fmt.Sprintf("shard %d of the job is still running", f.Item))
		case f.NotBefore.After(v.Now):
			d.waitUntil(key, WaitBackoff, "the retry waits for its backoff until "+fmtUntil(f.NotBefore), f.NotBefore)
		default:
			d.cands = append(d.cands, cand{key: key, job: f.Job, fail: f, sh: shapeOf(job, a, offers.Failover, 1)})
		}
	}
	for _, rd := range v.Ready {
		key := WaitKey(false, rd.Job, 0)
		job, a, why := v.Jobs.Lookup(rd.Job)
		if why != jobs.Runnable {
			d.notRunnable(key, Stale{Job: rd.Job}, job, why)
			continue
		}
		if rd.NotBefore.After(v.Now) { // a cron fire staged ahead of its instant
			d.waitUntil(key, WaitStaged, "a cron fire held until its instant "+fmtUntil(rd.NotBefore), rd.NotBefore)
			continue
		}
		items, ok := toLaunch(job, v.Running[rd.Job])
		if n := len(v.Running[rd.Job]); !ok || pendingFailover[rd.Job] { // never two executions of a job at once
			if n > 0 {
				d.wait(key, WaitRunning, "the job's previous execution is still running ("+plural(n, "shard")+")")
			} else {
				d.wait(key, WaitFailover, "failed shards of the job run again first")
			}
			continue
		}
		n := job.ShardingTotalCount
		if items != nil {
			n = len(items)
		}
		d.cands = append(d.cands, cand{key: key, job: rd.Job, ready: rd, items: items, sh: shapeOf(job, a, offers.Ready, n)})
		d.plan.Depth++
	}
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
		d.wait(key, WaitJobDisabled, "the job is disabled")
	default:
		d.wait(key, WaitAppDisabled, fmt.Sprintf("the job's app %s is disabled or missing", job.AppName))
	}
}

// place matches the candidates on the offers, in the capacity order
// (the package documentation has the policy).
func (d *decider) place() {
	v := d.v
	d.cluster = clusterOf(v.Agents, v.Offers)
	d.occ = occupancy{v: &d.v, cluster: d.cluster}
	d.offs = v.Offers
	if len(v.Offers) == 0 && len(d.cluster) > 0 {
		// No offer held (declined and filtered for a moment, or not offered
		// yet): the reasons come from what should be free, so they do not
		// flip to no_offers and back between offers.
		d.offs, d.estimated = d.occ.freeByCount(), true
	}
	d.m = offers.NewMatcher(d.offs, v.Executors)
	d.failed = map[shape]Wait{}
	d.ns.setup(&d.v, d.cands, d.cluster, d.m, &d.occ)
	for c := d.ns.next(); c != nil; c = d.ns.next() {
		d.consider(c)
		if d.stopped {
			d.ns.rest(d.consider)
		}
	}
	d.finish(d.m, d.launched)
	d.ns.preempt(&d.plan)
}

// consider decides one entry: it launches, or it gets its reason.
func (d *decider) consider(c *cand) {
	v := d.v
	if w := d.neverFits(c); w != nil {
		d.plan.Waiting[c.key] = *w
		return
	}
	n := c.count()
	if d.stopped || (v.MaxTasks > 0 && d.placedN > 0 && d.placedN+n > v.MaxTasks) {
		if !d.stopped {
			d.capped = cappedMessage(v.MaxTasks)
		}
		d.stopped, d.plan.More = true, true
		d.wait(c.key, WaitBehind, d.capped)
		return
	}
	if w, ok := d.ns.gate(c); !ok {
		if !w.Until.IsZero() { // lent capacity a fire needs back then
			d.wakeAt(w.Until)
		}
		d.plan.Waiting[c.key] = w
		return
	}
	if len(d.offs) == 0 {
		d.wait(c.key, WaitNoOffers, "no resources on offer: waiting for the cluster engine to offer resources")
		return
	}
	sh := c.shape()
	if w, ok := d.failed[sh]; ok {
		d.plan.Waiting[c.key] = d.ns.annotate(c, w)
		return
	}
	absent := 0
	if !sh.exec.IsZero() {
		absent = d.m.Absent(sh.app)
	}
	ok, reason, detail := d.m.Place(c.requests())
	if ok && d.estimated {
		w := Wait{Reason: WaitNoOffers, Message: "no resources on offer at the moment, though what it needs should be free by the running tasks' count: " +
			"waiting for the cluster engine to offer them"}
		d.plan.Waiting[c.key] = d.occ.withExecutors(c, d.occ.withHolders(c, w))
		d.plan.Withheld = true
		return
	}
	if ok {
		d.launched = append(d.launched, c)
		d.placedN += n
		started := 0
		if !sh.exec.IsZero() {
			started = absent - d.m.Absent(sh.app)
		}
		d.ns.placedIn(c, started)
		if v.MaxTasks > 0 && n > v.MaxTasks { // alone in its round, committed in parts
			d.plan.Chunked, d.stopped, d.capped = true, true, cappedMessage(v.MaxTasks)
		}
		return
	}
	w := d.explain(c, reason, detail)
	if reason != offers.ReasonInvalid {
		w = d.occ.withHolders(c, w)
	}
	if d.holder == nil {
		d.holder = c
		d.plan.Waiting[c.key] = d.ns.annotate(c, d.reserve(c, d.m, w))
		d.failed[sh] = d.behind(c, w)
		return
	}
	if d.plan.Reservation.Key != "" {
		w = d.behind(d.holder, w)
	}
	d.failed[sh] = w
	d.plan.Waiting[c.key] = d.ns.annotate(c, w)
}

// behind words the wait of an entry after the reservation's holder.
func (d *decider) behind(holder *cand, w Wait) Wait {
	r := d.plan.Reservation
	if r.Key == "" {
		return w
	}
	return Wait{Reason: WaitReservation, Message: fmt.Sprintf("behind the reservation of the older %s, which holds %s of what is free now "+
		"and takes what frees up on the agents it can use first; %s", describe(holder), fmtRes(r.Held), w.Message),
		Needs: w.Needs, Holders: w.Holders}
}

func describe(c *cand) string {
	if c.fail != nil {
		return fmt.Sprintf("failover shard %d of job %s", c.fail.Item, c.job)
	}
	return "execution of job " + c.job
}

func cappedMessage(max int) string {
	return fmt.Sprintf("behind older work: a round launches at most %d shards (one registry commit each round), "+
		"taken oldest first; the next round follows at once", max)
}

// finish turns the matcher's placements into the plan's launches, grouped
// per entry in the round's order, and says which offers go back.
func (d *decider) finish(m *offers.Matcher, launched []*cand) {
	op := m.Plan()
	// A launch belongs to its entry: a job's execution (every shard placed of it), or one
	// failover shard; a job may have several failover shards in one round.
	type gk struct {
		kind  offers.Kind
		job   string
		shard int // a failover entry's; -1 for an execution
	}
	shardOf := func(kind offers.Kind, shard int) int {
		if kind == offers.Failover {
			return shard
		}
		return -1
	}
	by := make(map[gk][]offers.Launch, len(launched))
	ids := make([]string, 0, len(op.Launches))
	for id := range op.Launches {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, l := range op.Launches[id] {
			k := gk{l.Request.Kind, l.Request.Job, shardOf(l.Request.Kind, l.Request.Shard)}
			by[k] = append(by[k], l)
		}
	}
	for _, c := range launched {
		job, a, _ := d.v.Jobs.Lookup(c.job)
		item := -1
		if c.fail != nil {
			item = c.fail.Item
		}
		ls := by[gk{c.kind(), c.job, shardOf(c.kind(), item)}]
		slices.SortFunc(ls, func(a, b offers.Launch) int { return a.Request.Shard - b.Request.Shard })
		for _, l := range ls {
			d.plan.Launches = append(d.plan.Launches, Launch{Launch: l, Job: job, App: a, Ready: c.ready, Failover: c.fail,
				Borrowing: c.class == classBorrowing})
		}
	}
	d.plan.Decline = op.Decline
	if d.estimated {
		d.plan.Decline = nil // nothing was offered
	}
	if d.plan.More && len(d.plan.Launches) > 0 {
		// The offers this round left untouched are for the next round,
		// which follows at once with the work after this round's.
		d.plan.Decline = nil
	}
	busy := d.busyCands()
	d.plan.Busy, d.plan.Idle = len(launched) < busy, busy == 0
}

// busyCands counts the candidates resources could serve (not those that
// can never fit).
func (d *decider) busyCands() int {
	n := 0
	for i := range d.cands {
		if w, ok := d.plan.Waiting[d.cands[i].key]; !ok || w.Reason != WaitTooLarge {
			n++
		}
	}
	return n
}

func fmtUntil(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func shardList(items []int) string { return strings.Trim(fmt.Sprint(items), "[]") }

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// work is a snapshot of what waits to run.
type work struct {
	requests []offers.Request
	ready    map[string]registry.Ready    // job → ready entry (for dequeue)
	failover map[string]registry.Failover // job@-@item → failover entry
	seen     map[string]time.Time         // job → when its ready entry was first seen committed
	waiting  map[string]registry.Waiting  // entry (registry.WaitingKey) → why it does not launch this round
	// later holds the entries (registry.WaitingKey) that would be requests
	// but come after what the round tries (trying): no request is built
	// for them. laterReady counts the ready executions among them.
	later      []string
	laterReady int
	// laterByCount: the round's cut was MaxRoundTasks, not resources.
	laterByCount bool
	offers       []offers.Offer         // the offers held, by id
	inputs       map[string]jobs.Inputs // run key → the keyed run's inputs (workflow nodes; runs.go)
}

// launch is one round: snapshot → match → commit → ACCEPT. Every entry it
// does not launch gets the reason why (waiting.go).
func (s *Scheduler) launch(ctx context.Context) {
	w, err := s.snapshot(ctx)
	if err != nil {
		s.Log.Error("launcher: snapshot", "err", err)
		return
	}
	defer func() {
		s.recordWaiting(ctx, w)
		s.wait.keepScratch(w)
	}()
	switch {
	case !s.subscribed:
		w.waitAll(registry.WaitNotSubscribed, "the scheduler is not subscribed to Mesos at the moment (it re-subscribes with backoff)")
		return
	case s.reconciling():
		w.waitAll(registry.WaitReconciling, fmt.Sprintf("launching waits until Mesos has confirmed the %d tasks recorded as running (at most until %s)",
			len(s.awaiting), fmtUntil(s.awaitUntil)))
		return
	}
	s.Observer.ReadyDepth(len(w.ready) + w.laterReady)
	if len(w.requests) == 0 {
		s.idle(ctx)
		return
	}
	s.lastWork = s.Clock.Now()
	if s.suppressed {
		if err := s.Driver.Revive(ctx); err != nil {
			s.Log.Warn("launcher: revive", "err", err)
		} else {
			s.suppressed = false
		}
	}
	if len(s.offers) == 0 {
		w.waitAll(registry.WaitNoOffers, "no resource offers held: waiting for Mesos to offer resources")
		return // REVIVE brings offers
	}
	s.noteCapacity()
	in := offers.Input{Requests: w.requests, Running: s.executors, Offers: w.offers}
	switch {
	case len(w.later) > 0 && w.laterByCount:
		w.waitBehind(w.later, cappedMessage(s.Options.MaxRoundTasks))
	case len(w.later) > 0:
		w.behind(in.Requests, w.later, in.Offers)
	}
	capped := w.laterByCount // the snapshot already cut at the bound
	if cut := capRound(in.Requests, s.Options.MaxRoundTasks); cut < len(in.Requests) {
		w.capped(in.Requests[cut:], s.Options.MaxRoundTasks)
		in.Requests = in.Requests[:cut]
		capped = true
	}
	if capped {
		s.Wake() // the rest in the next round
	}
	plan := offers.Match(in)
	s.lastPlan = plan.Unplaced
	s.explainUnplaced(&w, plan, in)
	if capped && len(plan.Launches) > 0 {
		// The offers this round left untouched are for the next round,
		// which follows at once with the work after this round's:
		// declined, they would come back only after the refusal (on a
		// large cluster most offers of a round capped at 512 tasks). A
		// round that placed nothing declines them as before: the next
		// would try the same work on the same offers, again and again.
		plan.Decline = nil
	}
	s.apply(ctx, w, plan)
}

// heldOffers are the offers held, as the matcher takes them (by id).
func (s *Scheduler) heldOffers() []offers.Offer {
	out := make([]offers.Offer, 0, len(s.offers))
	for _, o := range s.offers {
		out = append(out, offers.Offer{ID: o.ID, AgentID: o.AgentID, Hostname: o.Hostname,
			Free: offers.Resources{CPU: offers.CPUs(o.CPUs), MemMB: offers.MemMB(o.MemMB)}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// considerAtLeast is how many requests a round always tries.
const considerAtLeast = 512

// trying decides which requests a round tries, in the matcher's order
// (failover shards, then ready executions, oldest first): those whose
// resources add up to twice what the held offers have free, and at least
// considerAtLeast, cut between two jobs; with a bound on the tasks a round
// places (MaxRoundTasks), no more than it either: capRound would cut the
// rest before the matcher sees them (on a large cluster with offers held
// from a thousand agents, the resources alone never cut, and each round
// built a request for every shard of a backlog of 70,000 jobs to place
// 512). A long queue (a large cluster's backlog) then costs a round what
// can launch, not what waits: the snapshot builds no request for the rest
// (a backlog of 100,000 jobs is half a million shards). The matcher places
// oldest first, so what it would have placed from the rest is only younger
// work fitting in gaps the older left.
type trying struct {
	free, asked offers.Resources
	n           int
	max         int            // MaxRoundTasks (0: no bound)
	last        offers.Request // the last request tried
	full        bool           // the cut is made: nothing more is tried
	byCount     bool           // the cut was max
}

func newTrying(offs []offers.Offer, max int) *trying { return &trying{free: freeOf(offs), max: max} }

// freeOf is what the offers have free in all.
func freeOf(offs []offers.Offer) offers.Resources {
	var free offers.Resources
	for _, o := range offs {
		free.CPU, free.MemMB = free.CPU+o.Free.CPU, free.MemMB+o.Free.MemMB
	}
	return free
}

// admit reports whether r is tried; once one is not, no later one is.
func (t *trying) admit(r offers.Request) bool {
	if t.full {
		return false
	}
	boundary := t.n == 0 || r.Job != t.last.Job || r.Kind != t.last.Kind
	if boundary && t.max > 0 && t.n >= t.max {
		t.full, t.byCount = true, true
		return false
	}
	if boundary && t.n >= considerAtLeast && (t.asked.CPU > 2*t.free.CPU || t.asked.MemMB > 2*t.free.MemMB) {
		t.full = true
		return false
	}
	t.asked.CPU, t.asked.MemMB = t.asked.CPU+r.Task.CPU, t.asked.MemMB+r.Task.MemMB
	t.n++
	t.last = r
	return true
}

// capRound is how many of the requests a round may place when one launch
// commit may hold at most max tasks (0: no bound): a ZooKeeper multi is
// bounded in size (jute.maxbuffer, 1 MB by default, and the client's own
// buffer), and a round on a large cluster can place thousands. The cut
// falls between two jobs, after at least one (a gang is never split).
func capRound(reqs []offers.Request, max int) int {
	if max <= 0 || len(reqs) <= max {
		return len(reqs)
	}
	for i := max; i > 0; i-- {
		if reqs[i].Job != reqs[i-1].Job || reqs[i].Kind != reqs[i-1].Kind {
			return i
		}
	}
	for i := max + 1; i < len(reqs); i++ { // one gang larger than max
		if reqs[i].Job != reqs[i-1].Job || reqs[i].Kind != reqs[i-1].Kind {
			return i
		}
	}
	return len(reqs)
}

// capped gives the requests a bounded round left for the next their
// reason.
func (w *work) capped(rest []offers.Request, max int) {
	w.waitBehind(keysOf(rest), cappedMessage(max))
}

func cappedMessage(max int) string {
	return fmt.Sprintf("behind older work: a round launches at most %d shards (one registry commit each round), "+
		"taken oldest first; the next round follows at once", max)
}

// waitBehind records msg as the behind_older_work reason of the entries
// (registry.WaitingKey) a round left out.
func (w *work) waitBehind(rest []string, msg string) {
	for _, k := range rest {
		w.wait(k, registry.WaitBehind, msg, time.Time{})
	}
}

// keysOf names the entries of requests: one per ready execution (a gang)
// or failover shard.
func keysOf(reqs []offers.Request) []string {
	var keys []string
	for i, r := range reqs {
		if i > 0 && r.Job == reqs[i-1].Job && r.Kind == offers.Ready && reqs[i-1].Kind == offers.Ready {
			continue
		}
		keys = append(keys, waitKey(r))
	}
	return keys
}

// behind gives the requests a round did not try their reason: the older
// ones tried already ask for more than is free.
func (w *work) behind(tried []offers.Request, rest []string, offs []offers.Offer) {
	free := freeOf(offs)
	var asked offers.Resources
	jobs := 0
	for i, r := range tried {
		asked.CPU, asked.MemMB = asked.CPU+r.Task.CPU, asked.MemMB+r.Task.MemMB
		if i == 0 || r.Job != tried[i-1].Job || r.Kind != tried[i-1].Kind {
			jobs++
		}
	}
	msg := fmt.Sprintf("behind older work: the %d executions and failover shards queued before it ask for %s CPUs and %s MB, "+
		"more than twice what the %d offers held have free (%s CPUs, %s MB); rounds try the oldest work first",
		jobs, fmtCPU(asked.CPU), fmtMem(asked.MemMB), len(offs), fmtCPU(free.CPU), fmtMem(free.MemMB))
	w.waitBehind(rest, msg)
}

// idle declines every held offer and suppresses: nothing waits. Offers
// are kept for at most OfferHold after the last round that had work, so a
// burst of triggers (or a job's next execution) launches without a REVIVE
// round trip; after that they go back to the master.
func (s *Scheduler) idle(ctx context.Context) {
	if len(s.offers) > 0 && s.Options.OfferHold > 0 {
		if until := s.lastWork.Add(s.Options.OfferHold); s.Clock.Now().Before(until) {
			s.wakeAt(until)
			return
		}
	}
	if len(s.offers) > 0 {
		s.decline(ctx, s.heldIDs(), s.Options.RefuseIdle)
	}
	if !s.suppressed {
		if err := s.Driver.Suppress(ctx); err != nil {
			s.Log.Warn("launcher: suppress", "err", err)
			return
		}
		s.suppressed = true
	}
}

func (s *Scheduler) heldIDs() []string {
	ids := make([]string, 0, len(s.offers))
	for id := range s.offers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (s *Scheduler) decline(ctx context.Context, ids []string, refuse time.Duration) {
	if len(ids) == 0 {
		return
	}
	for _, id := range ids {
		delete(s.offers, id)
	}
	if err := s.Driver.Decline(ctx, ids, refuse); err != nil {
		s.Log.Warn("launcher: decline", "offers", len(ids), "err", err)
	}
	s.Observer.OffersSeen(0, len(ids))
}

// snapshot reads the ready and failover queues and turns runnable entries
// into match requests, as many as the round tries (trying; the rest go to
// w.later). Entries of deleted jobs are dropped.
func (s *Scheduler) snapshot(ctx context.Context) (work, error) {
	w := work{ready: map[string]registry.Ready{}, failover: map[string]registry.Failover{}, seen: map[string]time.Time{}}
	w.waiting, w.later = s.wait.takeScratch()
	w.offers = s.heldOffers()
	try := newTrying(w.offers, s.Options.MaxRoundTasks)
	running, err := s.runningAll(ctx)
	if err != nil {
		return w, err
	}
	fq, err := s.Registry.FailoverQueueMemo(ctx, &s.queues)
	if err != nil {
		return w, err
	}
	pendingFailover := map[string]bool{}
	for _, f := range fq {
		pendingFailover[f.Job] = true
		job, a, ok := s.catalog.Runnable(f.Job)
		if !ok {
			s.notRunnable(&w, registry.WaitingKey("failover", f.Job, f.Item), f.Job)
			s.dropStale(ctx, f.Job, registry.FailoverPathOf(f.Job, f.Item))
			continue
		}
		if f.Item >= job.ShardingTotalCount { // the job was resharded
			if err := s.Registry.Commit(ctx, deleteOp(registry.FailoverPathOf(f.Job, f.Item))); err != nil {
				s.Log.Warn("launcher: drop failover entry of a removed shard", "job", f.Job, "item", f.Item, "err", err)
			}
			continue
		}
		fkey := registry.WaitingKey("failover", f.Job, f.Item)
		if _, busy := running[f.Job][f.Item]; busy {
			w.wait(fkey, registry.WaitRunning, fmt.Sprintf("shard %d of the job is still running", f.Item), time.Time{})
			continue
		}
		if f.NotBefore.After(s.Clock.Now()) {
			s.wakeAt(f.NotBefore)
			w.wait(fkey, registry.WaitBackoff, "the retry waits for its backoff until "+fmtUntil(f.NotBefore), f.NotBefore)
			continue
		}
		r := request(job, a, f.Item, offers.Failover, f.Since)
		if !try.admit(r) {
			w.later = append(w.later, fkey)
			continue
		}
		w.failover[jobs.MetaKey(f.Job, f.Item)] = f
		w.requests = append(w.requests, r)
	}
	rq, err := s.readyQueue(ctx)
	if err != nil {
		return w, err
	}
	var items []int // one array for every job's shards: their numbers go into requests
	for _, rd := range rq {
		job, a, ok := s.catalog.Runnable(rd.Job)
		rkey := registry.WaitingKey("ready", rd.Job, 0)
		if !ok {
			s.notRunnable(&w, rkey, rd.Job)
			s.dropStale(ctx, rd.Job, registry.ReadyPath+"/"+rd.Job)
			continue
		}
		if rd.NotBefore.After(s.Clock.Now()) { // a cron fire staged ahead of its instant
			s.wakeAt(rd.NotBefore)
			w.wait(rkey, registry.WaitStaged, "a cron fire held until its instant "+fmtUntil(rd.NotBefore), rd.NotBefore)
			continue
		}
		items = s.itemsToLaunch(items[:0], job, running[rd.Job])
		if len(items) == 0 || pendingFailover[rd.Job] { // never two executions of a job at once
			if n := len(running[rd.Job]); n > 0 {
				w.wait(rkey, registry.WaitRunning, fmt.Sprintf("the job's previous execution is still running (%d shards)", n), time.Time{})
			} else {
				w.wait(rkey, registry.WaitFailover, "failed shards of the job run again first", time.Time{})
			}
			continue
		}
		first := request(job, a, items[0], offers.Ready, rd.Since)
		if !try.admit(first) {
			w.later = append(w.later, rkey)
			w.laterReady++
			continue
		}
		w.ready[rd.Job] = *rd
		s.seenMu.Lock()
		w.seen[rd.Job] = s.seen[rd.Job]
		s.seenMu.Unlock()
		w.requests = append(w.requests, first)
		for _, it := range items[1:] {
			r := request(job, a, it, offers.Ready, rd.Since)
			try.admit(r) // within the gang: always tried
			w.requests = append(w.requests, r)
		}
	}
	w.laterByCount = try.byCount
	return w, nil
}

// itemsToLaunch: a transient job launches all shards when none runs; a
// daemon job launches the shards that are not running. They are appended
// to items.
func (s *Scheduler) itemsToLaunch(items []int, job jobs.Config, running map[int]registry.Running) []int {
	if job.JobExecutionType == jobs.Transient && len(running) > 0 {
		return items
	}
	for i := range job.ShardingTotalCount {
		if _, busy := running[i]; !busy {
			items = append(items, i)
		}
	}
	return items
}

// dropStale removes a queue entry of a job that no longer exists. The
// catalog may lag the store (a job registered and triggered a moment ago),
// so absence is confirmed in the store; entries of disabled jobs stay until
// the disable handler clears them.
func (s *Scheduler) dropStale(ctx context.Context, name, path string) {
	if _, exists := s.catalog.Job(name); exists {
		return
	}
	if _, err := s.Registry.Job(ctx, name); !isNotFound(err) {
		return // the job exists (or the store could not say): keep the entry
	}
	if err := s.Registry.Commit(ctx, store.Delete(path, store.AnyVersion)); err != nil {
		s.Log.Warn("launcher: drop stale queue entry", "path", path, "err", err)
	}
}

func request(job jobs.Config, a app.Config, item int, kind offers.Kind, since time.Time) offers.Request {
	return offers.Request{
		Job: job.JobName, Shard: item, Kind: kind, App: a.AppName,
		Task:     offers.Resources{CPU: offers.CPUs(job.CPUCount), MemMB: offers.MemMB(job.MemoryMB)},
		Executor: offers.Resources{CPU: offers.CPUs(a.CPUCount), MemMB: offers.MemMB(a.MemoryMB)},
		Seq:      since.UnixNano(),
	}
}

// apply commits the plan's state changes, then sends the ACCEPTs and
// DECLINEs. A conflicting concurrent write (a trigger) makes the commit
// fail as a whole; the next round retries with fresh state.
func (s *Scheduler) apply(ctx context.Context, w work, plan offers.Plan) {
	now := s.Clock.Now()
	w.inputs = s.inputsOf(ctx, w, plan)
	byAgent, ops, events := s.build(w, plan, now)
	if len(ops) > 0 {
		if err := s.Registry.Commit(ctx, ops...); err != nil {
			if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
				s.Wake()
			} else {
				s.Log.Error("launcher: commit launch state", "err", err)
			}
			return
		}
		for _, ev := range events {
			if ev.Source != string(jobs.SourceFailover) {
				s.takeSeen(ev.Job) // the job's next execution counts from its own sighting
			}
		}
		for _, al := range byAgent {
			for i, rt := range al.running {
				tid, _ := jobs.ParseTaskID(rt.TaskID)
				al.running[i].Version = 0 // created by the commit
				s.putRunning(tid.JobName, tid.Item, al.running[i])
			}
		}
	}
	byTask := make(map[string]TaskEvent, len(events))
	for _, ev := range events {
		byTask[ev.TaskID] = ev
	}
	for agent, al := range byAgent {
		for _, id := range al.offerIDs {
			delete(s.offers, id)
		}
		sent := s.Clock.Now() // the metric runs to the ACCEPT being sent
		if err := s.Driver.Accept(ctx, al.offerIDs, al.launches, s.acceptRefuse()); err != nil {
			if ctx.Err() != nil {
				// Stopping, or the term ended: whether the master got the
				// ACCEPT is unknown, so the tasks stay STAGING for the next
				// leader's reconciliation, which queues again at once a task
				// the master never got (neverStarted) and keeps one it got.
				// A roll-back here could run such a task twice.
				s.Log.Info("launcher: accept interrupted; reconciliation settles its tasks", "agent", agent, "tasks", len(al.launches), "err", err)
				continue
			}
			s.Log.Error("launcher: accept", "agent", agent, "tasks", len(al.launches), "err", err)
			s.rollback(ctx, al.launches, w)
			continue
		}
		for _, l := range al.launches {
			appName, _, _ := jobs.ParseExecutorID(l.Executor.ID)
			s.executors[offers.ExecutorKey{App: appName, AgentID: agent}] = true
			ev := byTask[l.TaskID]
			ev.At = sent
			s.Observer.Launched(ev)
		}
	}
	refuse := s.Options.RefuseIdle
	if len(plan.Unplaced) > 0 {
		refuse = s.Options.RefuseBusy
	}
	s.decline(ctx, plan.Decline, refuse)
}

type agentLaunch struct {
	offerIDs []string
	launches []mesos.TaskLaunch
	running  []registry.Running // the entries recorded for launches, same order
}

// acceptRefuse is the filter on an accepted offer's unused resources:
// none while offers may be held (the remainder comes back at once as a new
// offer), else the busy filter.
func (s *Scheduler) acceptRefuse() time.Duration {
	if s.Options.OfferHold > 0 {
		return -1 // mesos: negative = no filter
	}
	return s.Options.RefuseBusy
}

// build turns the plan into per-agent launches, the state ops that record
// them (dequeue ready, drop failover, add running), and trace events.
func (s *Scheduler) build(w work, plan offers.Plan, now time.Time) (map[string]*agentLaunch, []store.Op, []TaskEvent) {
	byAgent := map[string]*agentLaunch{}
	n := 0
	offerIDs := make([]string, 0, len(plan.Launches))
	for id, ls := range plan.Launches {
		offerIDs = append(offerIDs, id)
		n += len(ls)
	}
	sort.Strings(offerIDs)
	ops := make([]store.Op, 0, 2*n) // a running entry and a dequeue or failover delete each, at most
	events := make([]TaskEvent, 0, n)
	dequeued := map[string]bool{}
	for _, oid := range offerIDs {
		for _, l := range plan.Launches[oid] {
			job, a, _ := s.catalog.Runnable(l.Request.Job)
			al := byAgent[l.AgentID]
			if al == nil {
				al = &agentLaunch{}
				byAgent[l.AgentID] = al
			}
			if len(al.offerIDs) == 0 || al.offerIDs[len(al.offerIDs)-1] != oid {
				al.offerIDs = append(al.offerIDs, oid)
			}
			tl, ev := s.taskLaunch(job, a, l, w, now)
			al.launches = append(al.launches, tl)
			events = append(events, ev)
			attempts := 0
			if l.Request.Kind == offers.Failover {
				attempts = w.failover[jobs.MetaKey(job.JobName, l.Request.Shard)].Attempts
			}
			rt := registry.Running{
				TaskID: tl.TaskID, AgentID: l.AgentID, Hostname: s.offers[oid].Hostname, ExecutorID: tl.Executor.ID,
				State: "TASK_STAGING", Source: ev.Source, Attempts: attempts, Parameter: s.parameterOf(job.JobName, l, w),
				RunKey: runKeyOf(job.JobName, l, w), LaunchedAt: now, UpdatedAt: now,
			}
			al.running = append(al.running, rt)
			ops = append(ops, registry.PutRunningOp(job.JobName, l.Request.Shard, rt))
			if l.Request.Kind == offers.Failover {
				f := w.failover[jobs.MetaKey(job.JobName, l.Request.Shard)]
				ops = append(ops, store.Delete(registry.FailoverPathOf(job.JobName, l.Request.Shard), f.Version))
			} else if !dequeued[job.JobName] {
				dequeued[job.JobName] = true
				ops = append(ops, registry.DequeueOp(w.ready[job.JobName], now))
			}
		}
	}
	return byAgent, ops, events
}

func (s *Scheduler) taskLaunch(job jobs.Config, a app.Config, l offers.Launch, w work, now time.Time) (mesos.TaskLaunch, TaskEvent) {
	kind, source := jobs.KindReady, jobs.SourceNormal
	if l.Request.Kind == offers.Failover {
		kind, source = jobs.KindFailover, jobs.SourceFailover
	} else if rd := w.ready[job.JobName]; rd.Misfired >= rd.Count {
		source = jobs.SourceMisfire // no normal fire left ahead of this one
	}
	if p := s.parameterOf(job.JobName, l, w); p != nil {
		job.JobParameter = *p
	}
	if job.TimeZone == "" && s.Options.Location != nil && s.Options.Location != time.Local {
		job.TimeZone = s.Options.Location.String() // a daemon's cron runs in the scheduler's zone, not the agent's
	}
	if s.Options.ResolveAppURL != nil {
		a.AppURL = s.Options.ResolveAppURL(a.AppURL)
	}
	tid := jobs.NewTaskID(job.JobName, l.Request.Shard, kind, l.AgentID)
	params, _ := jobs.ParseShardingItemParameters(job.ShardingItemParameters, job.ShardingTotalCount)
	data := jobs.TaskData{
		Version: jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{
			JobName: job.JobName, TaskID: tid.String(), ShardingTotalCount: job.ShardingTotalCount,
			JobParameter: job.JobParameter, ShardingItem: l.Request.Shard, ShardingParameter: params[l.Request.Shard],
			Inputs: w.inputs[runKeyOf(job.JobName, l, w)],
		},
		ExecutionSource: source, Job: job, App: a,
	}
	tl := mesos.TaskLaunch{
		TaskID: tid.String(), Name: fmt.Sprintf("%s-%d", job.JobName, l.Request.Shard), AgentID: l.AgentID,
		CPUs: job.CPUCount, MemMB: job.MemoryMB, Data: data.Marshal(), KillGrace: s.Options.KillGrace,
		Executor: s.executorSpec(a, l.AgentID),
	}
	queued := laterOf(w.ready[job.JobName].Since, w.ready[job.JobName].NotBefore)
	if l.Request.Kind == offers.Failover {
		queued = w.failover[jobs.MetaKey(job.JobName, l.Request.Shard)].Since
	} else if seen := w.seen[job.JobName]; seen.After(queued) {
		queued = seen
	}
	ev := TaskEvent{TaskID: tl.TaskID, Job: job.JobName, App: a.AppName, AgentID: l.AgentID, Item: l.Request.Shard,
		Source: string(source), Transient: job.JobExecutionType == jobs.Transient, At: now, Queued: queued}
	return tl, ev
}

// parameterOf returns the run's jobParameter override, if any: the oldest
// pending run's for a ready launch, the failed run's for a failover.
func (s *Scheduler) parameterOf(job string, l offers.Launch, w work) *string {
	if l.Request.Kind == offers.Failover {
		return w.failover[jobs.MetaKey(job, l.Request.Shard)].Parameter
	}
	if rd := w.ready[job]; len(rd.Runs) > 0 {
		p := rd.Runs[0].JobParameter
		return &p
	}
	return nil
}

func (s *Scheduler) executorSpec(a app.Config, agentID string) mesos.ExecutorSpec {
	return mesos.ExecutorSpec{
		ID: jobs.ExecutorID(a.AppName, agentID), Name: "elasticjob executor for " + a.AppName,
		CPUs: a.CPUCount, MemMB: a.MemoryMB, Command: s.Options.ExecutorCommand, Shell: false,
		URIs: s.Options.ExecutorURIs, Env: s.Options.ExecutorEnv,
	}
}

// rollback undoes the state of launches whose ACCEPT failed: running
// entries go, ready executions and failover entries come back.
func (s *Scheduler) rollback(ctx context.Context, launches []mesos.TaskLaunch, w work) {
	now := s.Clock.Now()
	requeued := map[string]bool{}
	for _, l := range launches {
		tid, err := jobs.ParseTaskID(l.TaskID)
		if err != nil {
			continue
		}
		ops := []store.Op{store.Delete(registry.RunningPathOf(tid.JobName, tid.Item), store.AnyVersion)}
		if tid.Kind == jobs.KindFailover {
			f := w.failover[tid.MetaKey()]
			ops = append(ops, registry.PutFailoverOp(tid.JobName, tid.Item, registry.Failover{TaskID: f.TaskID, Since: f.Since,
				Attempts: f.Attempts, NotBefore: f.NotBefore, Parameter: f.Parameter, RunKey: f.RunKey, Retry: f.Retry}))
		}
		if err := s.Registry.Commit(ctx, ops...); err != nil {
			s.Log.Error("launcher: roll back launch", "task", l.TaskID, "err", err)
			s.reloadRunning()
		} else {
			s.dropRunning(tid.JobName, tid.Item)
		}
		if tid.Kind == jobs.KindReady && !requeued[tid.JobName] {
			requeued[tid.JobName] = true
			if err := s.Registry.Requeue(ctx, tid.JobName, firstRun(w.ready[tid.JobName]), now); err != nil {
				s.Log.Error("launcher: re-queue", "job", tid.JobName, "err", err)
			}
		}
	}
}

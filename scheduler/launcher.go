package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// launcher runs launch rounds: read a view (the queues, the catalog, the
// running tasks, the offers held, the agents' totals), decide with
// round.Begin (pure), then apply the plan: commit the launches, ACCEPT
// them, DECLINE the rest, and hand the wait reasons to the recorder.
type launcher struct {
	reg     *registry.Registry
	driver  engine.Driver
	clock   clock.Clock
	log     *slog.Logger
	obs     observe.Tasks
	gauges  observe.Gauges
	opts    *Options
	st      *state
	catalog *Catalog
	queues  *queues
	waits   *waitRecorder
	alarm   *alarm
	seen    *seen
	wake    func()
	scratch map[string]queue.Wait
	runs    *durations // how long jobs' runs take, for the holders' expected ends
	// caps are the namespaces' capacities; nextFires the producer's next
	// fires (capacity.go).
	caps     *capacities
	clusters Clusters        // the clusters and their state (nil: one engine)
	moved    map[string]bool // DAEMON tasks asked to stop this term to move (daemonmove.go)
	// overlapRetry: DAEMON tasks whose overlapping move was given up, and when it is
	// tried again (overlap.go).
	overlapRetry map[string]time.Time
	nextFires    func(until time.Time, keep func(job string) bool) []round.Fire
	// nextFireAt is the producer's soonest next fire of any job (ok
	// false: none), for the decline filter (refuseBefore).
	nextFireAt func() (time.Time, bool)
	lateMemo   lateMemo                                                     // the last late launch's words (tasks.go)
	killRun    func(ctx context.Context, job, by string) (KilledRun, error) // on the loop
	status     *statusHandler                                               // ends a task killed before its launch failed (endKilled)
	// sharesExecutors: the engine's executors outlive their tasks (engine.Capabilities),
	// so an app's executor on an agent, once launched, stays charged (st.executors).
	sharesExecutors bool
	// lane is the lane of an ACCEPT on an agent's offers and how many of the lane's
	// ACCEPTs a round has in flight together (engine.Lanes; one lane of the engine's
	// Accepts when it has none).
	lane  func(agentID string) (string, int)
	start termStart // where the term's time went before its first launch (logged with it)
	// backoff holds rounds after ACCEPTs that found the engine
	// unavailable (launchbackoff.go).
	backoff engineBackoff
	// Several clusters: each cluster's ACCEPTs go off the loop (acceptLater). busy counts
	// a cluster's (its lane's) batches in flight; post hands their answers back to the
	// loop; flights ends with the last of them (Scheduler.Run waits for it); lateWaits are
	// the reasons of the entries a late answer rolled back, for the next round's record.
	busy      map[string]int
	post      func(ctx context.Context, f func(ctx context.Context))
	flights   sync.WaitGroup
	lateWaits map[string]queue.Wait
	// spent is where the current round's time on the loop went past its decision
	// (launch: commit, accept), for observe.Rounds.
	spent struct{ commit, accept time.Duration }
}

// roundClusters are the clusters for the round, each with its engine's bound on a round's
// tasks there (engine.ClusterRounds: a Kubernetes cluster's pods at its client's rate).
func (l *launcher) roundClusters(ctx context.Context) []round.ClusterState {
	cs := l.clusters.Clusters(ctx)
	r, ok := l.driver.(engine.ClusterRounds)
	if !ok {
		return cs
	}
	out := make([]round.ClusterState, len(cs))
	for i, c := range cs {
		c.MaxTasks = r.RoundTasks(c.Name)
		out[i] = c
	}
	return out
}

// round is one launch round. While a new term confirms the running tasks
// with the engine (reconcile.go), it launches what does not depend on
// them: only the entries of jobs with a task recorded as running wait
// for the answers (round.View.Unconfirmed).
func (l *launcher) round(ctx context.Context) {
	began := time.Now()
	v, err := l.view(ctx)
	if err != nil {
		l.log.Error("launcher: read the queues", "err", err)
		return
	}
	viewed := time.Now()
	if o, ok := l.gauges.(observe.ClusterOffers); ok {
		cpus, mem := map[string]float64{}, map[string]float64{}
		for _, off := range v.Offers {
			cpus[off.Cluster] += off.Free.CPU.Cores()
			mem[off.Cluster] += float64(off.Free.MemMB)
		}
		o.OffersHeld(cpus, mem)
	}
	p, rest := round.Begin(v)
	decided := time.Now()
	if !l.st.launched.Load() && len(p.Launches) > 0 && v.Connected {
		// The term's first launching round: where its time goes (takeover
		// timelines, docs/cluster.md). Wall clock, for the log only.
		l.log.Info("first launch round of the term", append([]any{"tasks", len(p.Launches), "ready", len(v.Ready), "running_jobs", len(v.Running),
			"view_took", viewed.Sub(began), "decide_took", time.Since(viewed), "decided_over_head", rest != nil}, l.start.attrs()...)...)
		l.st.launched.Store(true)
	}
	if !l.st.launched.Load() {
		defer func() { l.start.round(time.Since(began)) }()
	}
	l.spent.commit, l.spent.accept = 0, 0
	l.apply(ctx, v, &p, rest)
	for key, w := range l.lateWaits {
		if _, ok := p.Waiting[key]; ok {
			p.Waiting[key] = w // rolled back since the last round: why, once
		}
	}
	clear(l.lateWaits)
	l.waits.record(ctx, p.Waiting, queuedSince(v))
	l.scratch = p.Waiting // the recorder keeps none of it: the next round reuses it
	if r, ok := l.gauges.(observe.Rounds); ok {
		r.Round(roundSpent(v, len(p.Launches), began, viewed, decided, time.Now(), l.spent.commit, l.spent.accept))
	}
}

// roundSpent is a round as observe.Rounds hears it: what it could place on and where its
// time went (its view read from began to viewed, decided by decided, done by done).
func roundSpent(v round.View, tasks int, began, viewed, decided, done time.Time, commit, accept time.Duration) observe.Round {
	r := observe.Round{Tasks: tasks, View: viewed.Sub(began), Decide: decided.Sub(viewed), Commit: commit, Accept: accept}
	r.Other = max(0, done.Sub(decided)-commit-accept)
	seen := map[string]bool{}
	for _, o := range v.Offers {
		if !seen[o.Cluster] {
			seen[o.Cluster] = true
			r.Clusters++
		}
	}
	for _, shards := range v.Running {
		r.Running += len(shards)
	}
	return r
}

// queuedSince is, for the wait key of an entry of v's queues, since when
// it waits: when it was queued (a ready entry held until an instant, from
// that instant). The map is built at its first use, for a round with new
// waiting entries.
func queuedSince(v round.View) func(key string) (time.Time, bool) {
	var m map[string]time.Time
	return func(key string) (time.Time, bool) {
		if m == nil {
			m = make(map[string]time.Time, len(v.Ready)+len(v.Failover))
			for _, rd := range v.Ready {
				m[queue.WaitKey(false, rd.Job, 0)] = laterOf(rd.Since, rd.NotBefore)
			}
			for i := range v.Failover {
				f := &v.Failover[i]
				m[queue.WaitKey(true, f.Job, f.Item)] = f.Since
			}
		}
		t, ok := m[key]
		return t, ok && !t.IsZero()
	}
}

// view reads what a round looks at.
func (l *launcher) view(ctx context.Context) (round.View, error) {
	now := l.clock.Now()
	v := round.View{Now: now, Connected: l.st.subscribed, Jobs: l.catalog, Executors: l.st.executors,
		Offers: l.st.heldOffers(), Agents: l.st.cluster(), MaxTasks: l.opts.MaxRoundTasks, Reservation: l.st.reservation,
		Scratch: l.scratch}
	if len(l.st.awaiting) > 0 {
		if now.Before(l.st.awaitUntil) {
			v.Unconfirmed, v.ReconcileUntil = l.st.awaiting, l.st.awaitUntil
		} else {
			l.log.Warn("reconcile: no answer for some running tasks; launching anyway (they stay recorded as running)",
				"tasks", len(l.st.awaiting), "wait", l.opts.ReconcileWait)
			l.st.awaiting = nil
		}
	}
	if l.st.catchingUp && l.st.catchUpJobs != nil && now.Before(l.st.catchUpUntil) {
		v.CatchingUp = l.st.catchUpJobs // their missed fires are being queued (Scheduler.roundHeld)
	}
	if until, ok := l.backoff.holds(now, l.st.subscribedAt); ok {
		v.Unavailable = until // every entry waits until then (launchbackoff.go)
	}
	if v.Connected && v.Unavailable.IsZero() && len(v.Offers) > 0 && l.st.firstLaunch {
		// The term's first round that can launch places one commit's
		// worth, so its first ACCEPT is not behind a chain of commits (the
		// rest follows in the next round, woken by Plan.More).
		l.st.firstLaunch = false
		if n := l.opts.commitTasks(); n > 0 && (v.MaxTasks == 0 || n < v.MaxTasks) {
			v.MaxTasks = n
		}
	}
	var err error
	lap := l.lapper() // where a term's view time goes, until its first launch
	if v.Running, err = l.st.runningAll(ctx, l.reg); err != nil {
		return v, err
	}
	lap("running")
	v.Typical = l.runs.typical(ctx, v.Running)
	lap("typical")
	if v.Failover, err = l.queues.failover(ctx); err != nil {
		return v, err
	}
	if v.Ready, err = l.queues.ready(ctx, now); err != nil {
		return v, err
	}
	lap("queues")
	if l.clusters != nil {
		v.Clusters, v.NamespaceClusters = l.roundClusters(ctx), l.caps.placed
		l.leaveBusyOut(&v)
	}
	if v.Namespaces = l.caps.get(ctx); v.Namespaces != nil {
		v.Fires = l.fires(now, v.Namespaces, v.Ready)
		l.caps.checkCluster(v.Namespaces, v.Agents)
	}
	if len(v.Fires) > 0 {
		l.runs.addWaiting(v.Typical, v.Ready)
	}
	lap("capacities")
	l.moveDaemons(ctx, v)
	// Read after the moves, which begin and give up overlaps: the round counts the
	// retiring tasks there are now against their namespaces.
	retiring, err := l.st.retiringAll(ctx, l.reg)
	if err != nil {
		return v, err
	}
	v.Retiring = retiringEntries(retiring)
	return v, nil
}

// leaveBusyOut marks the clusters whose last ACCEPTs are still in flight busy and leaves
// their offers out of v: the round places nothing there (nothing goes twice on what a
// launch in flight may be using, and the cluster's pace is its own) and declines none of
// them (they are for its next round). Their launches in flight are running entries
// already, so the namespaces' limits and guarantees count them.
func (l *launcher) leaveBusyOut(v *round.View) {
	if len(l.busy) == 0 {
		return
	}
	for i, c := range v.Clusters {
		if l.busy[c.Name] > 0 {
			v.Clusters[i].Busy = true
		}
	}
	kept := v.Offers[:0:0]
	for _, o := range v.Offers {
		if lane, _ := l.lane(o.AgentID); l.busy[lane] == 0 {
			kept = append(kept, o)
		}
	}
	v.Offers = kept
}

// waitsForLanes reports whether the next round would find nothing to place on: clusters'
// ACCEPTs are in flight and every offer held is of one of them. The round waits for
// their answer (each wakes the loop), as it waited for every ACCEPT when they went on
// the loop, instead of deciding again over the queues for nothing; a scheduler with no
// offer held, or suppressed, still runs its rounds (they ask for offers).
func (l *launcher) waitsForLanes() bool {
	if len(l.busy) == 0 || len(l.st.offers) == 0 || l.st.suppressed {
		return false
	}
	for _, o := range l.st.offers {
		if lane, _ := l.lane(o.AgentID); l.busy[lane] == 0 {
			return false
		}
	}
	return true
}

// retiringEntries is the retiring records as the round counts them (nil: none).
func retiringEntries(all map[string]map[int]registry.Retiring) map[string]map[int]round.Retiring {
	if len(all) == 0 {
		return nil
	}
	out := make(map[string]map[int]round.Retiring, len(all))
	for job, items := range all {
		m := make(map[int]round.Retiring, len(items))
		for item, r := range items {
			m[item] = round.Retiring{Entry: r.Entry, Until: r.StartBy}
		}
		out[job] = m
	}
	return out
}

// lapper times the parts of a view for the term's first launch round's
// log (termStart), until the term has launched.
func (l *launcher) lapper() func(part string) {
	if l.st.launched.Load() {
		return func(string) {}
	}
	l.start.laps = l.start.laps[:0]
	mark := time.Now()
	return func(part string) {
		now := time.Now()
		l.start.lap(part, now.Sub(mark))
		mark = now
	}
}

// apply carries a plan out. A plan decided over the queues' head (rest
// not nil) that launches with more to follow is final in all the launch
// reads (round.Begin): the rest's reasons, and what they add (stale
// entries, the wake-up, the depth), are worked out after the launch is
// sent, so a backlog's size does not delay it. Otherwise the rest is
// finished first.
func (l *launcher) apply(ctx context.Context, v round.View, p *round.Plan, rest *round.Rest) {
	early := rest != nil && v.Connected && len(v.Offers) > 0 && len(p.Launches) > 0 && p.More
	if !early {
		rest.Finish(p)
		l.afterDecide(ctx, v.Connected, *p)
	}
	l.st.reservation = p.Reservation
	if !v.Connected || !v.Unavailable.IsZero() {
		return // nothing is asked of the engine; the offers held are kept
	}
	l.preempt(ctx, p.Preempt)
	if p.Idle {
		l.idle(ctx, v.Now, p.WakeAt)
		return
	}
	l.st.lastWork = v.Now
	switch {
	case l.st.suppressed:
		l.revive(ctx)
	case p.Withheld && len(v.Offers) == 0 && l.clock.Now().Before(l.st.filtersUntil):
		// Work fits what is free by the running tasks' count, but nothing
		// is offered while a decline filter of ours may stand: one issued
		// by a round that could not see this work (a fire staged while it
		// ran), or a larger declined pool's filter, which covers every
		// smaller pool of the agent until it lapses (Mesos' rule). REVIVE
		// clears them.
		l.log.Debug("launcher: work waits for resources a decline filter holds back; reviving", "filters_until", l.st.filtersUntil)
		l.revive(ctx)
	}
	if len(v.Offers) == 0 {
		return // REVIVE brings offers
	}
	if p.More {
		l.wake() // the rest in the next round
	}
	refuse := l.opts.RefuseIdle
	if p.Busy {
		refuse = l.opts.RefuseBusy
	}
	refuse = l.refuseBefore(v.Now, p.WakeAt, refuse)
	if len(p.Launches) > 0 {
		l.launch(ctx, v, *p, refuse) // the DECLINE goes with the ACCEPTs
		if early {
			// The plan declines nothing (More: the next round uses the
			// offers), so the refuse above, which the rest's wake-ups may
			// shorten, is not used.
			rest.Finish(p)
			l.afterDecide(ctx, v.Connected, *p)
		}
		return
	}
	l.decline(ctx, p.Decline, refuse)
}

// afterDecide does what a plan's reasons call for: the alarm for the
// soonest wake-up, the removal of stale entries, the ready depth.
func (l *launcher) afterDecide(ctx context.Context, connected bool, p round.Plan) {
	l.alarm.set(p.WakeAt)
	l.remove(ctx, p)
	if connected {
		l.gauges.ReadyDepth(p.Depth)
	}
}

// revive asks the engine for offers again, clearing every decline filter
// (Mesos: REVIVE removes the framework's filters) and the suppression.
func (l *launcher) revive(ctx context.Context) {
	if err := l.driver.Revive(ctx); err != nil {
		l.log.Warn("launcher: revive", "err", err)
		return
	}
	l.st.suppressed, l.st.filtersUntil = false, time.Time{}
}

// filtered notes a filter of refuse asked for now (decline, or an
// accept's unused remainder), for the revive of apply.
func (l *launcher) filtered(refuse time.Duration) {
	if refuse <= 0 {
		return
	}
	if until := l.clock.Now().Add(refuse); until.After(l.st.filtersUntil) {
		l.st.filtersUntil = until
	}
}

// refuseBefore shortens a decline filter so that the declined resources
// are offered again by the next instant work may launch at: the soonest
// cron fire (the producer's) or a waiting entry's (wakeAt: a staged fire,
// a backoff). Under another team's backlog every round declines what is
// left for RefuseBusy; a fire that needs those resources would otherwise
// wait until the filter lapses, up to RefuseBusy late.
func (l *launcher) refuseBefore(now, wakeAt time.Time, refuse time.Duration) time.Duration {
	next := wakeAt
	if l.nextFireAt != nil {
		if at, ok := l.nextFireAt(); ok && at.After(now) && (next.IsZero() || !next.After(now) || at.Before(next)) {
			next = at
		}
	}
	if !next.After(now) || next.Sub(now) >= refuse {
		return refuse
	}
	return max(next.Sub(now), time.Millisecond)
}

// remove drops the entries of jobs that are gone (confirmed in the store:
// the catalog may lag it, e.g. a job registered and triggered a moment
// ago) and of shards a job no longer has.
func (l *launcher) remove(ctx context.Context, p round.Plan) {
	if len(p.Drop)+len(p.Remove) == 0 {
		return
	}
	ch := l.reg.Change()
	for _, s := range p.Drop {
		if _, err := l.reg.Config().Job(ctx, s.Job); !errors.Is(err, registry.ErrJobNotFound) {
			continue // the job exists (or the store could not say): keep the entry
		}
		if s.Fail {
			ch.DropFailover(s.Job, s.Item)
		} else {
			ch.DropReady(s.Job)
		}
	}
	for _, s := range p.Remove {
		ch.DropFailover(s.Job, s.Item)
	}
	if err := ch.Commit(ctx); err != nil {
		l.log.Warn("launcher: drop stale queue entries", "entries", ch.Len(), "err", err)
	}
	l.queues.changed()
}

// idle declines every held offer and suppresses: nothing waits. Offers
// are kept for at most OfferHold after the last round that had work, so a
// burst of triggers (or a job's next execution) launches without a REVIVE
// round trip; after that they go back to the engine.
func (l *launcher) idle(ctx context.Context, now, wakeAt time.Time) {
	if len(l.st.offers) > 0 && l.opts.OfferHold > 0 {
		if until := l.st.lastWork.Add(l.opts.OfferHold); l.clock.Now().Before(until) {
			l.alarm.set(until)
			return
		}
	}
	if len(l.st.offers) > 0 {
		// Suppressed next, nothing is offered until a REVIVE (which clears
		// the filter); shortened all the same, in case SUPPRESS fails.
		l.decline(ctx, l.st.heldIDs(), l.refuseBefore(now, wakeAt, l.opts.RefuseIdle))
	}
	if !l.st.suppressed {
		if err := l.driver.Suppress(ctx); err != nil {
			l.log.Warn("launcher: suppress", "err", err)
			return
		}
		l.st.suppressed = true
	}
}

func (l *launcher) decline(ctx context.Context, ids []string, refuse time.Duration) {
	if len(ids) == 0 {
		return
	}
	l.declined(ids, l.declineCall(ids, refuse)(ctx))
}

// declineCall forgets the offers ids (on the loop) and returns the DECLINE
// of them, which touches nothing of the loop's; declined reports its result.
func (l *launcher) declineCall(ids []string, refuse time.Duration) func(context.Context) error {
	for _, id := range ids {
		delete(l.st.offers, id)
	}
	l.filtered(refuse)
	return func(ctx context.Context) error { return l.driver.Decline(ctx, ids, refuse) }
}

func (l *launcher) declined(ids []string, err error) {
	if err != nil {
		l.log.Warn("launcher: decline", "offers", len(ids), "err", err)
	}
	l.gauges.OffersSeen(0, len(ids))
}

// launch commits the plan's launches, then sends them to the engine, one
// ACCEPT per agent, and the plan's DECLINE with them (filtered for
// refuse). When nothing was committed (a conflicting write: the next round
// retries with fresh state) it sends nothing and keeps the offers.
func (l *launcher) launch(ctx context.Context, v round.View, p round.Plan, refuse time.Duration) {
	now := l.clock.Now()
	built := time.Now() // wall clock, for the term's first launch's log only
	b := l.build(ctx, p, now)
	buildTook := time.Since(built)
	var err error
	committing := time.Now()
	if n := l.opts.commitTasks(); !p.Chunked && n > 0 && len(b.order) > n {
		b, err = l.commitChain(ctx, b, now, n) // what it committed, whole executions
	} else {
		err = l.commit(ctx, p, b, now)
	}
	l.spent.commit = time.Since(committing)
	if err != nil {
		// Nothing launched: the entries still wait as they did, and their
		// reasons stay recorded (the next round words them again).
		for _, pl := range p.Launches {
			if pl.Failover != nil {
				l.waits.keep(queue.WaitKey(true, pl.Request.Job, pl.Failover.Item))
			} else {
				l.waits.keep(queue.WaitKey(false, pl.Request.Job, 0))
			}
		}
		if errors.Is(err, registry.ErrConflict) {
			if !l.start.committed {
				l.start.conflicts++
				l.log.Info("the term's launch commit conflicted; reading again", "err", err, "tasks", len(b.order))
			} else {
				l.log.Debug("launcher: the launch commit conflicted; reading again", "err", err)
			}
			l.wake()
		} else {
			l.log.Error("launcher: commit launch state", "err", err)
		}
		return
	}
	for _, ev := range b.events {
		if ev.Source != string(jobs.SourceFailover) {
			l.seen.take(ev.Job) // the job's next execution counts from its own sighting
		}
	}
	for _, pl := range b.order {
		l.st.putRunning(pl.job, pl.item, *b.entry(pl)) // created by the commit: version 0
	}
	if !l.start.committed { // the term's first: its takeover's last step before the engine
		l.start.committed = true
		if f := l.start.afterFirst; f != nil {
			l.start.afterFirst = nil
			f()
		}
		l.log.Info("the term's first launch committed; accepting", "tasks", len(b.order), "build_took", buildTook,
			"commit_took", l.clock.Now().Sub(now), "conflicts_before", l.start.conflicts, "since_term_start", time.Since(l.start.began))
	} else {
		l.log.Debug("launch committed; accepting", "tasks", len(b.order), "commit_took", l.clock.Now().Sub(now))
	}
	l.queues.changed()
	l.accept(ctx, b, p.Decline, refuse, p.Waiting, v.Clusters)
}

// commit records the launches: one change (running entries created, ready
// entries dequeued, failover entries taken), or, for one execution larger
// than a commit may hold, several: its entries in parts of commitTasks,
// then the rest with the dequeue and the gang mark that makes them count.
func (l *launcher) commit(ctx context.Context, p round.Plan, b *built, now time.Time) error {
	all, gang, n := b.order, "", len(b.order)
	if p.Chunked {
		gang, n = b.order[0].taskID, l.opts.commitTasks()
	}
	var done []placed
	for len(all) > n {
		ch := l.reg.Change()
		b.record(ch, all[:n], gang)
		if err := ch.Commit(ctx); err != nil {
			l.unlaunch(ctx, done)
			return err
		}
		done, all = append(done, all[:n]...), all[n:]
	}
	ch := l.reg.Change()
	b.record(ch, all, gang)
	b.dequeue(ch, now)
	if gang != "" {
		ch.MarkGang(b.order[0].job, gang)
	}
	if err := ch.Commit(ctx); err != nil {
		l.unlaunch(ctx, done)
		return err
	}
	return nil
}

// unlaunch removes the entries of a launch whose later commit failed (a
// new leader's sweep removes them if this does not).
func (l *launcher) unlaunch(ctx context.Context, done []placed) {
	if len(done) == 0 {
		return
	}
	ch := l.reg.Change()
	for _, pl := range done {
		ch.Unlaunch(pl.job, pl.item)
	}
	if err := ch.Commit(ctx); err != nil {
		l.log.Warn("launcher: remove the entries of an incomplete launch; the next leader's sweep removes them", "entries", len(done), "err", err)
	}
}

// accept sends each agent's launches (one ACCEPT per agent: an ACCEPT
// names offers of one agent) and the DECLINE of decline, several calls in
// flight together when the engine takes them so (engine.Capabilities.Accepts,
// per cluster: engine.Lanes), then handles their results on the loop in
// the agents' order (answered). With several clusters, each cluster's
// ACCEPTs go off the loop (acceptLater): the round does not wait for them,
// and their answers are handled on the loop when they come.
//
// The entries rolled back get their reason in waiting (the round's, which
// the recorder records next): they wait again, since they were queued,
// and are never shown waiting without one.
func (l *launcher) accept(ctx context.Context, b *built, decline []string, refuse time.Duration, waiting map[string]queue.Wait, clusters []round.ClusterState) {
	byTask := make(map[string]observe.TaskEvent, len(b.events))
	for _, ev := range b.events {
		byTask[ev.TaskID] = ev
	}
	taken := make(map[string]engine.Offer)
	for _, agent := range b.agents {
		for _, id := range b.byAgent[agent].offerIDs {
			if o, ok := l.st.offers[id]; ok {
				taken[id] = o
			}
			delete(l.st.offers, id)
		}
	}
	l.filtered(l.acceptRefuse())
	var declineErr error
	var extra func(context.Context)
	if len(decline) > 0 {
		call := l.declineCall(decline, refuse)
		extra = func(ctx context.Context) { declineErr = call(ctx) }
	}
	now, later := l.byCluster(b, clusters)
	for _, lb := range later {
		l.acceptLater(ctx, lb, byTask, taken)
	}
	sending := time.Now()
	sent, errs := l.sendAccepts(ctx, now, extra)
	l.spent.accept = time.Since(sending)
	l.answered(ctx, now, sent, errs, byTask, taken, waiting)
	if len(decline) > 0 {
		l.declined(decline, declineErr)
	}
}

// byCluster splits b's ACCEPTs: those the round sends and waits for (now), and, with
// several clusters, each cluster's own, sent off the loop (later; in the order of b.agents,
// each a part of b). With one cluster (or agents the lanes name no cluster of), a round
// waits for its ACCEPTs as ever: the next round's view reads what they did, and a single
// cluster has no other's launches to hold.
func (l *launcher) byCluster(b *built, clusters []round.ClusterState) (now *built, later []*built) {
	if len(clusters) < 2 {
		return b, nil
	}
	var here []string
	byLane := map[string]*built{}
	for _, agent := range b.agents {
		lane, _ := l.lane(agent)
		if !slices.ContainsFunc(clusters, func(c round.ClusterState) bool { return c.Name == lane }) {
			here = append(here, agent)
			continue
		}
		part := byLane[lane]
		if part == nil {
			part = &built{byAgent: b.byAgent}
			byLane[lane] = part
			later = append(later, part)
		}
		part.agents = append(part.agents, agent)
	}
	if len(later) == 0 {
		return b, nil
	}
	return &built{agents: here, byAgent: b.byAgent}, later
}

// inFlight is a launch whose ACCEPT went off the loop and is not answered yet (state.accepting).
type inFlight struct {
	ev   observe.TaskEvent // its launch, told to the observers once
	told bool              // told already: an update of the task came before the answer (statusHandler.commit)
	// kill is the agent of a kill asked for while the ACCEPT was in flight ("": none),
	// sent when it is answered (killTask).
	kill string
}

// killTask asks the engine to kill a task, or, while the task's ACCEPT is in flight
// (acceptLater), holds the kill until the ACCEPT is answered: sent at once it could reach
// the engine before the launch (a Mesos master answers a kill of a task it does not know
// yet with an end, then launches the task), and the task would run on, killed only as an
// orphan at the next reconciliation. The answer sends it (killHeld).
func killTask(ctx context.Context, st *state, driver engine.Driver, taskID, agentID string) error {
	if f := st.accepting[taskID]; f != nil {
		f.kill = agentID
		return nil
	}
	return driver.Kill(ctx, taskID, agentID)
}

// acceptLater sends one cluster's ACCEPTs of b off the loop, and hands their results to
// the loop when the last is answered (answered, as a round's): one refused is rolled back,
// one of unknown outcome left to reconciliation, one interrupted by the term's end left to
// the next leader (its answer is not handed back). Until then the cluster is busy: the
// rounds leave it out (leaveBusyOut), and its launches, committed before they were sent,
// count as running; the reconciler does not ask for them (an engine not reached yet would
// answer them unknown), and an update of one before the answer tells its launch first.
func (l *launcher) acceptLater(ctx context.Context, b *built, byTask map[string]observe.TaskEvent, taken map[string]engine.Offer) {
	lane, _ := l.lane(b.agents[0])
	if l.busy == nil {
		l.busy = map[string]int{}
	}
	l.busy[lane]++
	if l.st.accepting == nil {
		l.st.accepting = map[string]*inFlight{}
	}
	for _, agent := range b.agents {
		for _, tl := range b.byAgent[agent].launches {
			l.st.accepting[tl.TaskID] = &inFlight{ev: byTask[tl.TaskID]}
		}
	}
	l.flights.Add(1)
	go func() {
		defer l.flights.Done()
		sent, errs := l.sendAccepts(ctx, b, nil)
		l.post(ctx, func(ctx context.Context) {
			if l.busy[lane]--; l.busy[lane] <= 0 {
				delete(l.busy, lane)
			}
			waits := map[string]queue.Wait{}
			l.answered(ctx, b, sent, errs, byTask, taken, waits)
			for _, agent := range b.agents {
				for _, tl := range b.byAgent[agent].launches {
					delete(l.st.accepting, tl.TaskID)
				}
			}
			if l.lateWaits == nil {
				l.lateWaits = map[string]queue.Wait{}
			}
			maps.Copy(l.lateWaits, waits)
			l.wake() // the cluster takes work again
		})
	}()
}

// answered handles the results of b's ACCEPTs on the loop, in the agents' order: a failed
// ACCEPT is rolled back, one that may have been carried out (interrupted, or
// engine.ErrOutcomeUnknown) is left to reconciliation; one that found the engine
// unavailable (engine.ErrUnavailable) is rolled back and holds the next rounds back
// (launchbackoff.go). The entries rolled back get their reason in waiting.
func (l *launcher) answered(ctx context.Context, b *built, sent []time.Time, errs []error, byTask map[string]observe.TaskEvent,
	taken map[string]engine.Offer, waiting map[string]queue.Wait) {
	if len(b.agents) == 0 {
		return
	}
	var failed []*agentLaunch
	var failedErr error            // the first failure's, for the reason the rolled-back entries wait with
	down, answered := false, false // an ACCEPT found the engine unavailable; one succeeded
	for i, agent := range b.agents {
		al := b.byAgent[agent]
		if err := errs[i]; err != nil {
			if ctx.Err() != nil {
				// Stopping, or the term ended: whether the engine got the
				// ACCEPT is unknown, so the tasks stay STAGING for the next
				// leader's reconciliation, which queues again at once a task
				// the engine never got (task.NeverStarted) and keeps one it
				// got. A roll-back here could run such a task twice.
				l.log.Info("launcher: accept interrupted; reconciliation settles its tasks", "agent", agent, "tasks", len(al.launches), "err", err)
				continue
			}
			if errors.Is(err, engine.ErrOutcomeUnknown) {
				// Sent, and no answer: the engine may have launched the
				// tasks (a master killed after it launched them, before
				// it answered): a roll-back would run those shards twice.
				// They stay STAGING like an interrupted ACCEPT's: the
				// reconciliation of the next subscription, or the periodic
				// one (due at once: at the loop's next minute tick at the
				// latest, when the subscription outlived the call), queues
				// again a task the engine never got and keeps one it got.
				l.log.Warn("launcher: accept unanswered; reconciliation settles its tasks", "agent", agent, "tasks", len(al.launches), "err", err)
				l.st.reconciledAt = time.Time{}
				l.killHeld(ctx, al) // the engine may have launched them
				continue
			}
			l.log.Error("launcher: accept", "agent", agent, "tasks", len(al.launches), "err", err)
			if al = l.unheard(al); al == nil {
				continue
			}
			if al = l.endKilled(ctx, al, agent, err); al == nil {
				continue
			}
			failed = append(failed, al)
			if failedErr == nil {
				failedErr = err
			}
			down = down || (errors.Is(err, engine.ErrUnavailable) && !errors.Is(err, ErrRefused)) // a fence's refusal says nothing of the engine
			if errors.Is(err, ErrRefused) {
				// The fence refused the ACCEPT before sending it (a lease
				// confirmed late): the engine still holds these offers for
				// this framework, so they stay ours for the next round
				// instead of being stranded unanswered.
				for _, id := range al.offerIDs {
					if o, ok := taken[id]; ok {
						l.st.offers[id] = o
					}
				}
			}
			continue
		}
		answered = true
		l.killHeld(ctx, al)
		for _, tl := range al.launches {
			if l.sharesExecutors {
				app, _, _ := jobs.ParseExecutorID(tl.Executor.ID)
				l.st.executors[offers.ExecutorKey{App: app, AgentID: agent}] = true
			}
			if f := l.st.accepting[tl.TaskID]; f != nil && f.told {
				continue // an update of it came first, and told its launch
			}
			ev := byTask[tl.TaskID]
			ev.At = sent[i]
			l.obs.Launched(ev)
		}
	}
	l.rollback(ctx, failed)
	l.engineAnswered(down, answered)
	if len(failed) > 0 && waiting != nil {
		w := queue.Wait{Reason: queue.WaitLaunchFailed, Message: "its launch failed (" + failedErr.Error() +
			"): it is queued again under the same task ids and goes at the next round"}
		if down {
			w = queue.Wait{Reason: queue.WaitUnavailable, Message: "the cluster engine could not be reached at its launch; launches wait until " +
				l.backoff.until.UTC().Format(time.RFC3339), Until: l.backoff.until}
		}
		for _, al := range failed {
			for _, le := range al.entries {
				waiting[rolledBackKey(le)] = w
			}
		}
	}
}

// unheard is al without the launches the engine has sent an update of while their
// ACCEPT was in flight (acceptLater): it has them, whatever the ACCEPT's answer (a
// Kubernetes ACCEPT fails when one of its pods is refused, those created are the
// engine's), and rolled back they could run again beside themselves; nil when none is
// left. The ACCEPTs a round waited for have none.
func (l *launcher) unheard(al *agentLaunch) *agentLaunch {
	out, _ := al.without(func(f *inFlight) bool { return f.told }, l.st.accepting)
	return out
}

// killHeld sends the kills asked for while al's ACCEPT was in flight (killTask), now
// that the engine has had it.
func (l *launcher) killHeld(ctx context.Context, al *agentLaunch) {
	for _, tl := range al.launches {
		if f := l.st.accepting[tl.TaskID]; f != nil && f.kill != "" {
			l.log.Info("killing a task whose kill waited for its launch's answer", "task", tl.TaskID)
			if err := l.driver.Kill(ctx, tl.TaskID, f.kill); err != nil {
				l.log.Warn("kill a task after its launch's answer", "task", tl.TaskID, "err", err)
			}
		}
	}
}

// endKilled is al without the launches killed while their ACCEPT was in flight (killTask),
// which the failed ACCEPT (cause) never gave the engine: rolled back they would run after
// all, so each ends as its kill would have ended it (TASK_KILLED); nil when none is left.
func (l *launcher) endKilled(ctx context.Context, al *agentLaunch, agent string, cause error) *agentLaunch {
	out, killed := al.without(func(f *inFlight) bool { return f.kill != "" }, l.st.accepting)
	for _, tl := range killed {
		st := engine.Status{TaskID: tl.TaskID, AgentID: agent, State: task.Killed,
			Message: "killed while its launch was on its way to the cluster, whose launch then failed (" + cause.Error() + "): it never ran"}
		if err := l.status.handleOne(ctx, l.reg, st); err != nil {
			// Left recorded as launched: the reconciliation finds the engine never had it.
			l.log.Warn("end a task killed before its launch failed", "task", tl.TaskID, "err", err)
		}
	}
	return out
}

// without is al less the launches in flight of which drop says true, and those; nil
// when none is left.
func (al *agentLaunch) without(drop func(*inFlight) bool, accepting map[string]*inFlight) (*agentLaunch, []engine.TaskLaunch) {
	dropped := func(taskID string) bool { f := accepting[taskID]; return f != nil && drop(f) }
	if !slices.ContainsFunc(al.launches, func(tl engine.TaskLaunch) bool { return dropped(tl.TaskID) }) {
		return al, nil
	}
	out := &agentLaunch{offerIDs: al.offerIDs}
	var gone []engine.TaskLaunch
	for i, tl := range al.launches {
		if dropped(tl.TaskID) {
			gone = append(gone, tl)
			continue
		}
		out.launches = append(out.launches, tl)
		out.entries = append(out.entries, al.entries[i])
	}
	if len(out.launches) == 0 {
		return nil, gone
	}
	return out, gone
}

// rolledBackKey is the wait key of a rolled-back launch's entry.
func rolledBackKey(le launchedEntry) string {
	if le.fail != nil {
		return queue.WaitKey(true, le.job, le.item)
	}
	return queue.WaitKey(false, le.job, 0)
}

// engineAnswered starts or extends the backoff after a round whose
// ACCEPTs found the engine unavailable (down), and ends it after one
// whose ACCEPTs it answered, one at least with a launch (launchbackoff.go).
func (l *launcher) engineAnswered(down, answered bool) {
	now := l.clock.Now()
	switch {
	case down:
		wait := l.backoff.failed(now)
		l.log.Warn("launcher: the engine is unavailable; the rolled-back launches go again after a wait",
			"wait", wait, "rounds", l.backoff.rounds, "since", l.backoff.since)
	case answered && l.backoff.wait > 0:
		rounds, since := l.backoff.reset()
		l.log.Info("launcher: the engine answers again; launches no longer wait", "failed_rounds", rounds, "unavailable_for", now.Sub(since))
	}
}

// sendAccepts sends b's ACCEPTs, and then extra (if any), and returns when
// each ACCEPT was sent (what the launch metric runs to) and its error, in
// the order of b.agents. Each lane (l.lane: a cluster of several) sends its
// own ACCEPTs, at most its own in flight, beside the other lanes: a lane
// slow to launch (a Kubernetes cluster creating its pods at its client's
// rate) neither takes another lane's slots nor holds its ACCEPTs to one at
// a time. extra goes last in a lone lane, else in a lane of its own. The
// calls touch nothing of the loop's.
func (l *launcher) sendAccepts(ctx context.Context, b *built, extra func(context.Context)) ([]time.Time, []error) {
	sent, errs := make([]time.Time, len(b.agents)), make([]error, len(b.agents))
	one := func(i int) {
		if i == len(b.agents) {
			extra(ctx)
			return
		}
		al := b.byAgent[b.agents[i]]
		sent[i] = l.clock.Now()
		errs[i] = l.driver.Accept(ctx, al.offerIDs, al.launches, l.acceptRefuse())
	}
	type lane struct {
		calls    []int // indexes of b.agents; len(b.agents): extra
		inFlight int
	}
	var lanes []*lane
	byName := map[string]*lane{}
	for i, agent := range b.agents {
		name, n := l.lane(agent)
		ln := byName[name]
		if ln == nil {
			ln = &lane{inFlight: n}
			byName[name] = ln
			lanes = append(lanes, ln)
		}
		ln.calls = append(ln.calls, i)
	}
	if extra != nil {
		if len(lanes) == 1 {
			lanes[0].calls = append(lanes[0].calls, len(b.agents))
		} else {
			lanes = append(lanes, &lane{calls: []int{len(b.agents)}, inFlight: 1})
		}
	}
	if len(lanes) == 1 && (lanes[0].inFlight <= 1 || len(lanes[0].calls) == 1) {
		for _, i := range lanes[0].calls {
			one(i)
		}
		return sent, errs
	}
	var wg sync.WaitGroup
	for _, ln := range lanes {
		next := make(chan int, len(ln.calls))
		for _, i := range ln.calls {
			next <- i
		}
		close(next)
		for range min(max(ln.inFlight, 1), len(ln.calls)) {
			wg.Go(func() {
				for i := range next {
					one(i)
				}
			})
		}
	}
	wg.Wait()
	return sent, errs
}

// acceptRefuse is the filter on an accepted offer's unused resources:
// none while offers may be held (the remainder comes back at once as a new
// offer), else the busy filter.
func (l *launcher) acceptRefuse() time.Duration {
	if l.opts.OfferHold > 0 {
		return -1 // mesos: negative = no filter
	}
	return l.opts.RefuseBusy
}

// rollback undoes the state of launches whose ACCEPT failed: running
// entries go, ready executions (once per job, whatever the agents its
// shards were on) and failover entries come back, keeping the ids the
// tasks had: the ACCEPT may have reached the engine all the same, and a
// second launch of a task that runs is then refused by the engine
// (fireTaskID). A job's roll-back is one commit, its running entries
// removed with its execution queued again (since it was first queued):
// a reader never finds the execution neither running nor queued, nor
// queued anew, and a store that fails one of two commits (a lost quorum,
// when the fence refuses the ACCEPT: a write that timed out lands later,
// a read fails) never leaves it nowhere. When that commit fails, the
// entries stay STAGING: the reconciliation runs again a task the engine
// never got (task.NeverStarted), serving its instant.
func (l *launcher) rollback(ctx context.Context, failed []*agentLaunch) {
	if len(failed) == 0 {
		return
	}
	now := l.clock.Now()
	type undo struct {
		ch    *registry.Change
		rd    *queue.Ready
		tasks map[int]string
		items []int
	}
	var jobsOrder []string
	byJob := map[string]*undo{}
	for _, al := range failed {
		for i, tl := range al.launches {
			le := al.entries[i]
			u := byJob[le.job]
			if u == nil {
				u = &undo{ch: l.reg.Change(), tasks: map[int]string{}}
				byJob[le.job] = u
				jobsOrder = append(jobsOrder, le.job)
			}
			u.ch.Unlaunch(le.job, le.item)
			u.items = append(u.items, le.item)
			if f := le.fail; f != nil {
				u.ch.FailOver(le.job, le.item, queue.Failover{TaskID: f.TaskID, Since: f.Since, Attempts: f.Attempts, NotBefore: f.NotBefore,
					Parameter: f.Parameter, RunKey: f.RunKey, ScheduledAt: f.ScheduledAt, Nominal: f.Nominal, Retry: f.Retry, Relaunch: tl.TaskID})
			}
			if le.ready != nil {
				u.rd = le.ready
				u.tasks[le.item] = tl.TaskID
			}
		}
	}
	for _, job := range jobsOrder {
		u := byJob[job]
		var err error
		if u.rd != nil {
			cfg, _, _ := l.catalog.Lookup(job)
			err = l.reg.Work().Requeue(ctx, u.ch, job, u.rd.First(), u.rd.FirstBy(), cfg.Misfire, u.rd.FirstNominal(), u.rd.Since, now, u.tasks)
		} else {
			err = u.ch.Commit(ctx)
		}
		if err != nil {
			l.log.Error("launcher: roll back launch", "job", job, "shards", len(u.items), "err", err)
			l.st.reloadRunning()
		} else {
			for _, item := range u.items {
				l.st.dropRunning(job, item)
			}
		}
		l.queues.changed()
	}
}

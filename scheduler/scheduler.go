package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
)

// LateAfter is how late a launch may be before its event says why.
const LateAfter = time.Second

// commitTasks is the most launches one commit holds (0: no bound).
func (o *Options) commitTasks() int {
	if o.MaxCommitTasks > 0 {
		return o.MaxCommitTasks
	}
	return o.MaxRoundTasks
}

// Options tune the scheduler.
type Options struct {
	ExecutorCommand string            // executor binary path (or command) on agents
	ExecutorEnv     map[string]string // extra environment for executors
	ExecutorURIs    []engine.URI      // files the agent fetches before starting an executor
	RefuseIdle      time.Duration     // decline filter when nothing waits (default 5s)
	RefuseBusy      time.Duration     // decline filter when work waits but does not fit (default 1s)
	OfferHold       time.Duration     // keep offers this long after the last work before declining (0: decline at once)
	FireLead        time.Duration     // stage cron fires this long before their instant (0: at the instant)
	CronJitter      time.Duration     // the scheduler-wide jitter window of jobs setting none (0: none)
	Term            int64             // the leader term's fencing sequence, stamped into each task's data (0: none)
	MaxRoundTasks   int               // bound on the tasks one launch round places; 0: none
	MaxCommitTasks  int               // bound on the launches one commit holds (a ZooKeeper multi's size; on the embedded store, what an urgent commit may wait behind): a larger round is a chain of commits; 0: MaxRoundTasks
	Reconcile       time.Duration     // periodic explicit reconciliation (0 = off)
	Unreachable     time.Duration     // how long a task may stay UNREACHABLE before it counts as lost (default 10m)
	// ClusterLostAfter is, per cluster, how long a task stays UNREACHABLE because its whole
	// cluster was lost before it counts as lost, in place of Unreachable (clusters_file's
	// lost_after); a cluster not in it takes Unreachable.
	ClusterLostAfter map[string]time.Duration
	ReconcileWait    time.Duration  // after subscribing, launching waits this long for every running task's state (default 15s)
	Location         *time.Location // default time zone of crons
	KillGrace        time.Duration  // SIGTERM→SIGKILL grace for killed tasks
	// FrameworkID is the engine's framework id as the registry held it at
	// the term's start ("": none): a subscription under it persists
	// nothing (no registry write on the takeover's path).
	FrameworkID string
	// ResolveAppURL, when set, rewrites an app's URL at launch: a package
	// hosted by the scheduler is fetched from this (the leading) instance,
	// whichever instance stored the appURL (packages.Host.Resolve).
	ResolveAppURL func(appURL string) string
	// SecretAccess, when set, tells the task of a job that names secrets
	// of its namespace where and with which token its executor fetches
	// them as it starts: the payload carries no value (docs/tenancy.md).
	SecretAccess func(taskID string) *jobs.SecretAccess
	// TaskUser, when set, is the OS user the agents run a namespace's
	// executors and tasks as ("" for the framework's user): on real Mesos
	// each namespace's work runs as its own user (mesos_task_users).
	TaskUser func(namespace string) string
}

func (o *Options) defaults() {
	if o.RefuseIdle <= 0 {
		o.RefuseIdle = 5 * time.Second
	}
	if o.RefuseBusy <= 0 {
		o.RefuseBusy = time.Second
	}
	if o.ReconcileWait <= 0 {
		o.ReconcileWait = 15 * time.Second
	}
	if o.Unreachable <= 0 {
		o.Unreachable = 10 * time.Minute
	}
	if o.Location == nil {
		o.Location = time.Local
	}
}

// Deps are the scheduler's collaborators.
type Deps struct {
	Registry *registry.Registry
	Driver   engine.Driver
	// Inventory, when set, lists the engine's agents with their totals
	// (read every inventoryEvery on its own goroutine), so work that could
	// never fit the cluster is told from work that waits; without it an
	// agent's total is the most it ever offered.
	Inventory engine.Inventory
	Clock     clock.Clock
	Log       *slog.Logger
	// Tasks hears what happens to tasks (history, webhooks, metrics);
	// it may also be an observe.Daemons. Gauges hears the loop's figures
	// (metrics); it may also be an observe.Waiting. Either may be nil.
	Tasks    observe.Tasks
	Gauges   observe.Gauges
	Notifier observe.Notifier // may be nil
	// RecentRuns, when set, starts each job's run durations from history
	// (for when running work is expected to end); without it they come
	// from the runs this term sees.
	RecentRuns RecentRuns
	// Catalog, when set, is the instance's catalog kept current between
	// terms (Catalog.Follow): the term takes it over and syncs it instead
	// of loading the whole configuration. Nil: a catalog of the term's own.
	Catalog *Catalog
	// Clusters, when set, are the clusters the engine composes (engine/clusters) with
	// their state, read every round: the round places by the jobs' and the namespaces'
	// cluster policies (docs/clusters.md). Nil: one engine, no policy.
	Clusters Clusters
	// Flows makes the workflows' runs for the fires the producer makes of
	// their schedules (the term's workflow engine; nil: none). The engine
	// hands the schedules in through Scheduler.Timetable.
	Flows   FlowRuns
	Options Options
}

// Clusters says which clusters the scheduler runs on, in the configured order, and
// which of them are drained.
type Clusters interface {
	Clusters(ctx context.Context) []round.ClusterState
}

// Scheduler is the leader's brain: one loop goroutine that owns the
// leader's state and runs, in turn, the parts that each do one job — the
// status handler, the launcher, the reconciler, the wait recorder, the
// configuration follower — fed by the engine's events, the producer's
// fires, the registry's watches and the API. Create with New, drive with
// Run, and hand it to the engine as its Handler.
type Scheduler struct {
	deps     Deps
	st       *state
	catalog  *Catalog
	producer *Producer
	queues   *queues
	launcher *launcher
	status   *statusHandler
	recon    *reconciler
	config   *configFollower
	seen     *seen
	alarm    *alarm

	events chan func(ctx context.Context)
	wake   chan struct{}
	ready  chan struct{} // closed when Run has loaded the catalog

	offersArrived atomic.Bool // the term's first offers arrived (logged)
	freeOSMemory  func()      // debug.FreeOSMemory (tests count its calls): freeAfterLoad

	inboxMu      sync.Mutex
	inbox        []inboxItem     // the engine stream's events not yet taken by the loop (batch.go)
	inboxUpdates int             // how many of them are status updates
	updates      []pendingUpdate // status updates for the next batch
}

// New builds a scheduler.
func New(d Deps) *Scheduler {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Tasks == nil {
		d.Tasks = nopTasks{}
	}
	if d.Gauges == nil {
		d.Gauges = nopGauges{}
	}
	d.Options.defaults()
	s := &Scheduler{deps: d, st: newState(), events: make(chan func(ctx context.Context), 1024),
		wake: make(chan struct{}, 1), ready: make(chan struct{}), freeOSMemory: debug.FreeOSMemory}
	s.st.frameworkID = d.Options.FrameworkID
	s.alarm = newAlarm(d.Clock)
	s.seen = &seen{clock: d.Clock}
	s.catalog = d.Catalog
	if s.catalog == nil {
		s.catalog = NewCatalog(d.Registry)
	}
	s.queues = &queues{reg: d.Registry, log: d.Log.With("subsystem", "launcher"), memo: &registry.QueueMemo{}}
	if d.Catalog != nil {
		s.queues.memo = d.Catalog.QueueMemo() // warm: the first round decodes what changed since the standby's last read
	}
	opts := &s.deps.Options
	s.producer = &Producer{
		Registry: d.Registry, Catalog: s.catalog, Clock: d.Clock, Location: opts.Location,
		Log: d.Log.With("subsystem", "producer"), Events: producerEvents{s}, Lead: opts.FireLead, Jitter: opts.CronJitter,
		Flows: d.Flows,
	}
	runs := newDurations(d.RecentRuns, d.Log.With("subsystem", "launcher"))
	s.status = &statusHandler{driver: d.Driver, clock: d.Clock, log: d.Log.With("subsystem", "status"), obs: d.Tasks,
		notifier: d.Notifier, st: s.st, catalog: s.catalog, queues: s.queues, runs: runs}
	s.recon = &reconciler{reg: d.Registry, driver: d.Driver, clock: d.Clock, log: d.Log.With("subsystem", "reconciler"),
		opts: opts, st: s.st, status: s.status, wake: s.Wake, alarm: s.alarm}
	s.status.answered = s.recon.answered
	s.recon.async, s.recon.post = func(f func()) { go f() }, s.post
	waits := &waitRecorder{reg: d.Registry, clock: d.Clock, log: d.Log.With("subsystem", "waiting"), gauges: d.Gauges,
		alarm: s.alarm, opts: opts}
	caps := d.Driver.Capabilities()
	s.launcher = &launcher{reg: d.Registry, driver: d.Driver, clock: d.Clock, log: d.Log.With("subsystem", "launcher"),
		obs: d.Tasks, gauges: d.Gauges, opts: opts, st: s.st, catalog: s.catalog, queues: s.queues, waits: waits, alarm: s.alarm,
		seen: s.seen, wake: s.Wake, runs: runs, nextFires: s.producer.NextFires, nextFireAt: s.producer.NextFireAt, sharesExecutors: caps.ExecutorSharing,
		lane: laneOf(d.Driver, caps),
		caps: &capacities{reg: d.Registry, clock: d.Clock, log: d.Log.With("subsystem", "launcher"), engine: d.Driver}, clusters: d.Clusters, moved: map[string]bool{},
		overlapRetry: map[string]time.Time{}}
	s.launcher.killRun, s.launcher.post, s.launcher.status = s.killRun, s.post, s.status
	s.config = &configFollower{reg: d.Registry, driver: d.Driver, clock: d.Clock, log: d.Log.With("subsystem", "config"),
		st: s.st, catalog: s.catalog, producer: s.producer, queues: s.queues, runs: runs}
	return s
}

// Launched reports whether the scheduler has launched work (its term's
// first launching round ran): the term's takeover is over. Safe from any
// goroutine.
func (s *Scheduler) Launched() bool { return s.st.launched.Load() }

// Timetable is the producer, which fires the jobs' schedules and the
// workflows' the engine hands in (Producer.ScheduleFlow).
func (s *Scheduler) Timetable() *Producer { return s.producer }

// Catalog exposes the configuration cache.
func (s *Scheduler) Catalog() *Catalog { return s.catalog }

// Wake tells the loop that work may be waiting.
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// post runs f on the loop goroutine (without waiting).
func (s *Scheduler) post(ctx context.Context, f func(ctx context.Context)) {
	select {
	case s.events <- f:
	case <-ctx.Done():
	}
}

// call runs f on the loop goroutine and waits for it.
func (s *Scheduler) call(ctx context.Context, f func(ctx context.Context) error) error {
	done := make(chan error, 1)
	s.post(ctx, func(ctx context.Context) { done <- f(ctx) })
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// releaseBound bounds the catalog's sync after a term (Run).
const releaseBound = 3 * time.Second

// Run loads the configuration and runs the producer, the watches and the
// loop until ctx ends (the leader context).
func (s *Scheduler) Run(ctx context.Context) error {
	// Last, after the term's context ends: the ACCEPTs sent off the loop end with it
	// (launcher.acceptLater), and none outlives the term.
	defer s.launcher.flights.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg := s.deps.Registry
	cfg, err := reg.WatchConfig(ctx)
	if err != nil {
		return err
	}
	ready, err := reg.WatchReady(ctx)
	if err != nil {
		return err
	}
	if s.deps.Catalog != nil {
		s.catalog.take()
		defer func() {
			// Bounded: a store without a quorum never answers the sync's
			// linearizable reads, and the stop must not wait for them. A
			// sync cut short costs nothing lasting: the next term syncs
			// the catalog before it uses it, and Follow applies the
			// changes it sees from here on.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseBound)
			defer cancel()
			if err := s.catalog.release(rctx); err != nil {
				s.deps.Log.Warn("catalog: sync after the term", "err", err)
			}
		}()
	}
	began := time.Now()
	if err := s.catalog.Sync(ctx); err != nil {
		return err
	}
	s.deps.Log.Debug("catalog synced", "decoded", s.catalog.lastSynced(), "took", time.Since(began))
	s.post(ctx, loadRunning(s.st, reg, s.deps.Log)) // the loop's first event: while the subscription is on its way
	close(s.ready)
	s.st.catchingUp = true // until the producer's catch-up committed (roundHeld); the loop is not running yet
	s.st.catchUpUntil = s.deps.Clock.Now().Add(subscribeWait)
	s.launcher.start.began = time.Now()
	errc := make(chan error, 4)
	go func() { errc <- s.producer.Run(ctx) }()
	go func() { errc <- s.followConfig(ctx, cfg) }()
	go func() { errc <- s.followReady(ctx, ready) }()
	if s.deps.Inventory != nil {
		go func() { errc <- s.followInventory(ctx) }()
	}
	s.post(ctx, s.config.queueDaemons)
	s.launcher.runs.start(ctx, s.post)
	return s.loop(ctx, errc)
}

// loadFreeAfter bounds how long the term's load garbage waits for its
// first launch before it is returned (freeAfterLoad).
const loadFreeAfter = 10 * time.Second

// freeAfterLoad is what the producer's Loaded does: the garbage a term's load of
// a large registry leaves is returned to the system (debug.FreeOSMemory,
// a full collection: at 100,000 jobs a live heap of ≈ 650 MB to mark)
// once the term's first launch has committed, or loadFreeAfter after the
// load if none comes, not beside the takeover's first round (a full
// collection there delays the term's first launch).
func (s *Scheduler) freeAfterLoad(ctx context.Context) func() {
	return func() {
		var once sync.Once
		free := func() { once.Do(func() { go s.freeOSMemory() }) }
		s.post(ctx, func(context.Context) {
			if s.launcher.start.committed {
				free()
				return
			}
			s.launcher.start.afterFirst = free
		})
		t := s.deps.Clock.NewTimer(loadFreeAfter)
		go func() {
			defer t.Stop()
			select {
			case <-t.C():
				free()
			case <-ctx.Done():
			}
		}()
	}
}

// producerEvents is how the scheduler hears its producer (Events).
type producerEvents struct{ s *Scheduler }

func (e producerEvents) Fired([]string) { e.s.Wake() }

func (e producerEvents) Committed(job string, scheduled, committed time.Time) {
	e.s.deps.Gauges.Fired(job, scheduled, committed)
}

func (e producerEvents) Stale(ctx context.Context, job string, config uint64) {
	go e.s.post(ctx, func(ctx context.Context) { e.s.config.refresh(ctx, job, config) })
}

// Loaded: loading a large registry leaves garbage behind (freeAfterLoad).
func (e producerEvents) Loaded(ctx context.Context) { e.s.freeAfterLoad(ctx)() }

// CaughtUp ends the hold of the term's launch rounds on the catch-up
// (roundHeld).
func (e producerEvents) CaughtUp(ctx context.Context) {
	e.s.post(ctx, func(context.Context) {
		e.s.st.catchingUp = false
		e.s.launcher.start.caughtUpNow()
	})
}

// Counted narrows the hold of the term's launch rounds to the jobs the
// catch-up queues fires for.
func (e producerEvents) Counted(ctx context.Context, jobs []string) {
	set := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		set[j] = true
	}
	e.s.post(ctx, func(context.Context) { e.s.st.catchUpJobs = set })
}

// loadRunning reads the tasks the registry holds as running into the
// loop's mirror as the term starts, while its subscription is on its way:
// the subscription's reconciliation asks about each of them, and its turn
// read them (0.3-0.4 s for 4,000 tasks at 100,000 jobs) between the
// subscription and the first launch round. Only the term's leader writes
// running entries, through the loop, which keeps the mirror as it does
// after any read.
func loadRunning(st *state, reg *registry.Registry, log *slog.Logger) func(context.Context) {
	return func(ctx context.Context) {
		began := time.Now() // wall clock, for the log only
		all, err := st.runningAll(ctx, reg)
		if err != nil {
			log.Debug("read the running tasks at the term's start; read again when needed", "err", err)
			return
		}
		log.Info("the term's running tasks read", "jobs", len(all), "took", time.Since(began))
	}
}

// followConfig hands each configuration change to the loop.
func (s *Scheduler) followConfig(ctx context.Context, ch <-chan registry.ConfigChange) error {
	for c := range ch {
		s.post(ctx, func(ctx context.Context) { s.config.apply(ctx, c) })
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("scheduler: the configuration watch closed")
}

// followReady turns ready-queue changes into launcher wake-ups and keeps
// the producer's belief of which jobs have a ready entry.
func (s *Scheduler) followReady(ctx context.Context, ch <-chan registry.ReadyChange) error {
	s.producer.NoteReady("", false) // start believing: entries are tracked from here on
	s.queues.watched.Store(true)
	if q, err := s.deps.Registry.Work().ReadyQueue(ctx); err == nil {
		for _, rd := range q {
			s.producer.NoteReady(rd.Job, true)
		}
	}
	for c := range ch {
		s.queues.changed()
		if c.Job != "" {
			s.producer.NoteReady(c.Job, c.Present)
			s.seen.note(c.Job, c.Present)
		}
		s.Wake()
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("scheduler: the ready-queue watch closed")
}

// inventoryEvery is how often the engine's inventory is read.
const inventoryEvery = 5 * time.Second

// followInventory reads the engine's agents and their totals now and then
// (off the loop: it may be a network call) and hands them to the loop.
func (s *Scheduler) followInventory(ctx context.Context) error {
	t := s.deps.Clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if agents, err := s.deps.Inventory.Agents(ctx); err == nil {
			s.post(ctx, func(context.Context) { s.st.agents = agents })
		} else if ctx.Err() == nil {
			s.deps.Log.Debug("inventory: read the engine's agents", "err", err)
		}
		t.Reset(inventoryEvery)
	}
}

func (s *Scheduler) loop(ctx context.Context, errc <-chan error) error {
	tick := s.deps.Clock.NewTimer(s.tickEvery())
	defer tick.Stop()
	defer s.alarm.timer.Stop()
	ts := turnState{since: s.deps.Clock.Now()}
	for {
		dirty := false
		select {
		case <-s.alarm.timer.C():
			s.alarm.rang()
			dirty = true
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case f := <-s.events:
			f(ctx)
			dirty = true
		case <-s.wake:
			dirty = true
		case <-tick.C():
			s.recon.periodic(ctx)
			tick.Reset(s.tickEvery())
			dirty = true
		case <-ts.throttle:
			ts.throttle = nil
		}
		s.turn(ctx, &ts, dirty)
	}
}

// turnState is what the loop carries from one turn to the next.
type turnState struct {
	pending  bool             // a launch round is due
	throttle <-chan time.Time // set while rounds are spaced out (roundGap)
	since    time.Time        // the loop's start (the term's)
}

// turn is one turn of the loop after what woke it (dirty: something
// changed): the queued events, the status updates taken this turn
// (takeInbox), the reconciliation's retry, then a launch round if one is
// due and not held back. The term's first round that can launch (offers
// held while st.firstLaunch) is never held back: not by the last round's
// spacing, not by the status backlog, and the turn that leads to it
// handles none of the backlog's updates first (takeInbox), so a takeover's
// first launch comes one round after its subscription and its offers, not
// after the updates the old leader left and the answers.
func (s *Scheduler) turn(ctx context.Context, ts *turnState, dirty bool) {
	began := time.Now()
	s.drain(ctx)
	s.handleUpdates(ctx)
	s.recon.again(ctx)
	if !s.st.launched.Load() {
		s.launcher.start.turn(time.Since(began))
	}
	if s.st.roundNow || s.firstLaunchDue() { // the term may launch now: not held by the last round's spacing
		s.st.roundNow, ts.throttle, dirty = false, nil, true
	}
	ts.pending = ts.pending || dirty
	if ts.pending && ts.throttle == nil && !s.backlogged() && !s.roundHeld(ts.since) && !s.launcher.waitsForLanes() {
		ts.pending = false
		start := time.Now()
		s.launcher.round(ctx)
		if gap := roundGap(time.Since(start)); gap > 0 {
			ts.throttle = time.After(gap)
		}
	}
}

// subscribeWait bounds how long a term's launch rounds wait for its first
// subscription to the engine, and for the producer's catch-up of the fires
// missed while no leader fired; offersWait how long, after a subscription,
// its first round waits for offers (roundHeld).
const (
	subscribeWait = 5 * time.Second
	offersWait    = time.Second
)

// roundHeld reports whether launch rounds wait (an alarm wakes the loop at
// the bound). While the producer's catch-up has not counted the jobs it
// queues missed fires for, since the term's start (since) less than
// subscribeWait ago (once counted, only those jobs' entries wait until it
// commits: launcher.view, round.View.CatchingUp): an execution the last
// leader staged (a ready entry held until its instant) launched before it
// left the missed fires of a misfire=false job nothing pending to collapse
// into, and they queued a second execution for one takeover gap (when the
// first round comes milliseconds into the term). While
// the term has not subscribed yet, since its start less than subscribeWait
// ago; and after a subscription, until its first offers, at most
// offersWait. Such a round launches nothing, and at a takeover it held the
// loop when the subscription, then the offers, came: at 6,000 jobs on etcd
// 0.7 s of reading and deciding over the ready queue before the
// subscription, and a round with no offer costs as much as one with offers
// at 100,000 jobs (the subscription REVIVEs, so the previous term's
// SUPPRESS or decline filters hold no offer back). Past the bounds, and
// after a later disconnection, rounds run as before, and say why the work
// waits (queue.WaitNotSubscribed, WaitNoOffers).
func (s *Scheduler) roundHeld(since time.Time) bool {
	now := s.deps.Clock.Now()
	var until time.Time
	hold := func(t time.Time) {
		if now.Before(t) && t.After(until) {
			until = t
		}
	}
	by := ""
	if s.st.catchingUp && s.st.catchUpJobs == nil && !since.IsZero() {
		hold(since.Add(subscribeWait)) // once counted, only the jobs it queues fires for wait (launcher.view)
		by = "catch-up"
	}
	switch {
	case !s.st.subscribed && !s.st.everSubscribed && !since.IsZero():
		hold(since.Add(subscribeWait))
		by += " subscription"
	case s.st.subscribed && s.st.firstLaunch && len(s.st.offers) == 0 && !s.st.subscribedAt.IsZero():
		hold(s.st.subscribedAt.Add(offersWait))
		by += " offers"
	}
	if until.IsZero() {
		s.launcher.start.held("")
		return false
	}
	s.launcher.start.held(strings.TrimSpace(by))
	s.alarm.set(until)
	return true
}

// firstLaunchDue reports whether the term's first round that can launch
// is due: offers are held, and no round has looked at them since the
// subscription (the round clears st.firstLaunch).
func (s *Scheduler) firstLaunchDue() bool {
	return s.st.firstLaunch && s.st.subscribed && len(s.st.offers) > 0
}

// roundGap spaces launch rounds out once they get expensive (a large
// ready queue): after a round that took d, the loop handles events and
// status updates for as long again before the next round, so rounds take
// at most half of the loop and updates are never starved by them. A cheap
// round (the usual case) is followed at once. It is a bound on CPU, so it
// runs on the wall clock, not the injected one. It counts what the round
// waited for (commits, ACCEPTs) too. Spacing by the round's work alone was
// tried: more launches in separate runs (ZooKeeper at 15,000 jobs +19 %;
// the embedded store at 100,000 jobs 1,365/s against 955-1,072/s), but
// the embedded store's fires were late by 157 ms at p99 (at a 20 ms lead)
// and ZooKeeper with a standby at 100,000 jobs did not move; not kept
// until measured side by side (docs/benchmarks.md).
func roundGap(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return 0
	}
	return d
}

// drain handles queued events before a launch round, so a burst of
// updates and offers is decided on once.
func (s *Scheduler) drain(ctx context.Context) {
	for range 4096 {
		select {
		case f := <-s.events:
			f(ctx)
		case <-s.wake:
		default:
			return
		}
	}
}

func (s *Scheduler) tickEvery() time.Duration {
	d := time.Minute
	if r := s.deps.Options.Reconcile; r > 0 {
		d = min(r, d)
	}
	if u := s.deps.Options.Unreachable; u > 0 { // a task unreachable too long is counted lost within a quarter of the bound
		d = min(d, max(u/4, 5*time.Second))
	}
	for _, u := range s.deps.Options.ClusterLostAfter {
		if u > 0 {
			d = min(d, max(u/4, 5*time.Second))
		}
	}
	return d
}

// Reconcile runs a reconciliation on the loop (for the API).
func (s *Scheduler) Reconcile(ctx context.Context, explicit bool) error {
	return s.call(ctx, func(ctx context.Context) error { return s.recon.reconcile(ctx, explicit) })
}

type nopTasks struct{}

func (nopTasks) Launched(observe.TaskEvent)                     {}
func (nopTasks) StatusChanged(observe.TaskEvent, engine.Status) {}

type nopGauges struct{}

func (nopGauges) Fired(string, time.Time, time.Time) {}
func (nopGauges) ReadyDepth(int)                     {}
func (nopGauges) OffersSeen(int, int)                {}

// laneOf is the launcher's lanes of ACCEPTs: the driver's own (engine.Lanes: a cluster's
// ACCEPTs beside another's), else one lane of caps' Accepts.
func laneOf(d engine.Driver, caps engine.Capabilities) func(agentID string) (string, int) {
	if l, ok := d.(engine.Lanes); ok {
		return l.Lane
	}
	n := caps.InFlight()
	return func(string) (string, int) { return "", n }
}

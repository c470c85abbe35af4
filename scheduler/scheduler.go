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
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// Driver is what the scheduler asks of its cluster engine.
type Driver = engine.Driver

// Observer receives what happens to tasks, for history and metrics. Calls
// are made on the loop goroutine and must not block.
type Observer interface {
	Launched(t TaskEvent)
	StatusChanged(t TaskEvent, st mesos.Status)
	Fired(job string, scheduled, committed time.Time)
	ReadyDepth(n int)
	OffersSeen(n int, declined int)
}

// TaskEvent describes one task.
type TaskEvent struct {
	TaskID, Job, App, AgentID, Hostname string
	Item                                int
	Source                              string
	Transient                           bool
	At                                  time.Time
	Queued                              time.Time // when the work entered the ready or failover queue
}

// Options tune the scheduler.
type Options struct {
	ExecutorCommand string            // executor binary path (or command) on agents
	ExecutorEnv     map[string]string // extra environment for executors
	ExecutorURIs    []mesos.URI       // files the agent fetches before starting an executor
	RefuseIdle      time.Duration     // decline filter when nothing waits (default 5s)
	RefuseBusy      time.Duration     // decline filter when work waits but does not fit (default 1s)
	OfferHold       time.Duration     // keep offers this long after the last work before declining (0: decline at once)
	FireLead        time.Duration     // stage cron fires this long before their instant (0: at the instant)
	MaxRoundTasks   int               // bound on the tasks one launch round places (one commit); 0: none
	Reconcile       time.Duration     // periodic explicit reconciliation (0 = off)
	Unreachable     time.Duration     // how long a task may stay UNREACHABLE before it counts as lost (default 10m)
	ReconcileWait   time.Duration     // after subscribing, launching waits this long for every running task's state (default 15s)
	Location        *time.Location    // default time zone of crons
	KillGrace       time.Duration     // SIGTERM→SIGKILL grace for killed tasks
	// ResolveAppURL, when set, rewrites an app's URL at launch: a package
	// hosted by the scheduler is fetched from this (the leading) instance,
	// whichever instance stored the appURL (packages.Host.Resolve).
	ResolveAppURL func(appURL string) string
}

// Deps are the scheduler's collaborators.
type Deps struct {
	Registry *registry.Registry
	Driver   Driver
	Clock    clock.Clock
	Log      *slog.Logger
	Observer Observer // may be nil
	Notifier Notifier // may be nil
	Options  Options
}

// Scheduler is the leader's brain. Create with New, drive with Run, and
// hand it to the Mesos client as its Handler.
type Scheduler struct {
	Deps
	catalog  *Catalog
	producer *Producer
	events   chan func(ctx context.Context)
	wake     chan struct{}
	ready    chan struct{} // closed when Run has loaded the catalog

	// Loop-owned state.
	offers       map[string]mesos.Offer
	executors    map[offers.ExecutorKey]bool
	suppressed   bool
	subscribed   bool
	unreachable  map[string]time.Time
	lastPlan     []offers.Unplaced
	retryTimer   clock.Timer // wakes the loop when a delayed retry is due
	retryAt      time.Time
	running      map[string]map[int]registry.Running // mirror of /state/running (running.go)
	lastWork     time.Time                           // last launch round that had work waiting
	awaiting     map[string]bool                     // running tasks whose reconciliation answer is missing
	awaitUntil   time.Time                           // launching waits for them until then
	reconciledAt time.Time                           // the last periodic explicit reconciliation
	overtaken    taskSet                             // tasks a reconciliation answer ended as gone (status.go)
	wait         waitState                           // why work waits (waiting.go)
	queues       registry.QueueMemo                  // decoded queue entries of the last round
	readyGen     atomic.Uint64                       // changes seen to the ready queue (readyqueue.go)
	readyRead    readyRead                           // the ready queue of the last round, and its generation
	readyWatched atomic.Bool                         // forwardWakes follows the ready queue
	updates      []pendingUpdate                     // status updates for the next batch (batch.go)
	inboxMu      sync.Mutex
	inbox        []inboxItem // the Mesos stream's events not yet taken by the loop (batch.go)
	inboxUpdates int         // how many of them are status updates

	seenMu sync.Mutex
	seen   map[string]time.Time // when a job's ready entry was first seen committed (for latency metrics)
}

// New builds a scheduler.
func New(d Deps) *Scheduler {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Options.RefuseIdle <= 0 {
		d.Options.RefuseIdle = 5 * time.Second
	}
	if d.Options.RefuseBusy <= 0 {
		d.Options.RefuseBusy = time.Second
	}
	if d.Options.ReconcileWait <= 0 {
		d.Options.ReconcileWait = 15 * time.Second
	}
	if d.Options.Unreachable <= 0 {
		d.Options.Unreachable = 10 * time.Minute
	}
	if d.Options.Location == nil {
		d.Options.Location = time.Local
	}
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	s := &Scheduler{
		Deps:        d,
		events:      make(chan func(ctx context.Context), 1024),
		wake:        make(chan struct{}, 1),
		ready:       make(chan struct{}),
		offers:      map[string]mesos.Offer{},
		executors:   map[offers.ExecutorKey]bool{},
		unreachable: map[string]time.Time{},
	}
	if d.Registry != nil { // the loop's own commits count as ready-queue changes at once
		s.Registry = d.Registry.With(stampingKV{KV: d.Registry.KV(), gen: &s.readyGen})
	}
	s.retryTimer = d.Clock.NewTimer(time.Hour)
	s.retryTimer.Stop()
	s.catalog = NewCatalog(d.Registry)
	s.producer = &Producer{
		Registry: d.Registry, Catalog: s.catalog, Clock: d.Clock, Location: d.Options.Location,
		Log: d.Log.With("subsystem", "producer"), OnFire: func([]string) { s.Wake() }, Lead: d.Options.FireLead,
		Observe: func(job string, sch, com time.Time) { s.Observer.Fired(job, sch, com) },
	}
	return s
}

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

// Run loads the configuration and runs the producer, the catalog follower
// and the loop until ctx ends (the leader context).
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfgEv, disEv, err := s.catalog.Watch(ctx)
	if err != nil {
		return err
	}
	stateEv, err := s.Registry.KV().Watch(ctx, "/state/ready")
	if err != nil {
		return fmt.Errorf("scheduler: watch ready queue: %w", err)
	}
	if err := s.catalog.Load(ctx); err != nil {
		return err
	}
	s.producer.AfterLoad = debug.FreeOSMemory // loading a large registry leaves garbage behind
	close(s.ready)
	errc := make(chan error, 3)
	go func() { errc <- s.producer.Run(ctx) }()
	go func() {
		errc <- s.catalog.Follow(ctx, cfgEv, disEv, func(ev store.Event) {
			s.post(ctx, func(ctx context.Context) { s.configEvent(ctx, ev) })
		})
	}()
	reg := s.Registry // the loop swaps s.Registry for its batches (batch.go): goroutines keep their own
	go func() { errc <- s.forwardWakes(ctx, reg, stateEv) }()
	s.post(ctx, s.queueDaemons)
	return s.loop(ctx, errc)
}

// forwardWakes turns ready-queue changes into launcher wake-ups and keeps
// the producer's belief of which jobs have a ready entry.
func (s *Scheduler) forwardWakes(ctx context.Context, reg *registry.Registry, ev <-chan store.Event) error {
	s.producer.NoteReady("", false) // start believing: entries are tracked from here on
	s.readyWatched.Store(true)
	if q, err := reg.ReadyQueue(ctx); err == nil {
		for _, rd := range q {
			s.producer.NoteReady(rd.Job, true)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-ev:
			if !ok {
				return fmt.Errorf("scheduler: ready-queue watch closed")
			}
			s.readyGen.Add(1)
			if job, ok := strings.CutPrefix(e.Path, registry.ReadyPath+"/"); ok && !strings.Contains(job, "/") {
				s.producer.NoteReady(job, e.Type == store.EventPut)
				s.noteSeen(job, e.Type == store.EventPut)
			}
			s.Wake()
		}
	}
}

func (s *Scheduler) loop(ctx context.Context, errc <-chan error) error {
	tick := s.Clock.NewTimer(s.tickEvery())
	defer tick.Stop()
	defer s.retryTimer.Stop()
	pending := false              // a launch round is due
	var throttle <-chan time.Time // set while rounds are spaced out (roundGap)
	for {
		dirty := false
		select {
		case <-s.retryTimer.C():
			s.retryAt = time.Time{}
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
			s.periodic(ctx)
			tick.Reset(s.tickEvery())
			dirty = true
		case <-throttle:
			throttle = nil
		}
		s.drain(ctx)
		s.handleUpdates(ctx)
		pending = pending || dirty
		if pending && throttle == nil && !s.backlogged() {
			pending = false
			start := time.Now()
			s.launch(ctx)
			if gap := roundGap(time.Since(start)); gap > 0 {
				throttle = time.After(gap)
			}
		}
	}
}

// roundGap spaces launch rounds out once they get expensive (a large
// ready queue): after a round that took d, the loop handles events and
// status updates for as long again before the next round, so rounds take
// at most half of the loop and updates are never starved by them. A cheap
// round (the usual case) is followed at once. It is a bound on CPU, so it
// runs on the wall clock, not the injected one.
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

// noteSeen records when a job's ready entry was first seen committed; the
// launch metrics count from there (the trigger's own commit is the API's
// cost, not the launcher's).
func (s *Scheduler) noteSeen(job string, present bool) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if s.seen == nil {
		s.seen = map[string]time.Time{}
	}
	if !present {
		delete(s.seen, job)
	} else if _, ok := s.seen[job]; !ok {
		s.seen[job] = s.Clock.Now()
	}
}

// takeSeen returns and forgets when job's ready entry was first seen.
func (s *Scheduler) takeSeen(job string) time.Time {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	t := s.seen[job]
	delete(s.seen, job)
	return t
}

// wakeAt arms the retry timer for t unless it is already armed earlier.
func (s *Scheduler) wakeAt(t time.Time) {
	if !s.retryAt.IsZero() && !t.Before(s.retryAt) {
		return
	}
	s.retryAt = t
	s.retryTimer.Reset(max(t.Sub(s.Clock.Now()), 0))
}

func (s *Scheduler) tickEvery() time.Duration {
	if s.Options.Reconcile > 0 {
		return min(s.Options.Reconcile, time.Minute)
	}
	return time.Minute
}

type nopObserver struct{}

func (nopObserver) Launched(TaskEvent)                    {}
func (nopObserver) StatusChanged(TaskEvent, mesos.Status) {}
func (nopObserver) Fired(string, time.Time, time.Time)    {}
func (nopObserver) ReadyDepth(int)                        {}
func (nopObserver) OffersSeen(int, int)                   {}

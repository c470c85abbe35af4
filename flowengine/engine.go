package flowengine

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// Killer kills a task through Mesos (the term's guarded driver).
type Killer interface {
	Kill(ctx context.Context, taskID, agentID string) error
}

// Observer is told of every committed change of a run (metrics, history).
// Calls are made on the engine's goroutine and must not block.
type Observer interface {
	RunChanged(prev, next workflow.Run)
}

// FireObserver is an Observer that also hears how late each cron fire's
// run was made: its instant and the run's commit. Only the instants of
// the term are told (a takeover's replay of the instants no leader fired
// is late by the gap, not by the engine).
type FireObserver interface {
	CronFired(instant, made time.Time)
}

// Options tune the engine; zero values take the defaults shown.
type Options struct {
	// KeptRuns is how many finished runs of each workflow the registry
	// keeps (100); older ones are in the history database only.
	KeptRuns int
	// Sweep is how often lost executions are looked for and cancels
	// re-applied (5s); retention runs every RetainEvery (1m).
	Sweep       time.Duration
	RetainEvery time.Duration
	// KeyLifetime is how long trigger idempotency keys are kept (24h).
	KeyLifetime time.Duration
}

func (o *Options) defaults() {
	if o.KeptRuns <= 0 {
		o.KeptRuns = 100
	}
	if o.Sweep <= 0 {
		o.Sweep = 5 * time.Second
	}
	if o.RetainEvery <= 0 {
		o.RetainEvery = time.Minute
	}
	if o.KeyLifetime <= 0 {
		o.KeyLifetime = 24 * time.Hour
	}
}

// Deps are the engine's collaborators.
type Deps struct {
	// Registry is the term's registry: every write carries its fence.
	Registry *registry.Registry
	Killer   Killer // may be nil (nothing is killed)
	Clock    clock.Clock
	Log      *slog.Logger
	Observer Observer // may be nil
	// Timetable fires the workflows' crons (the term's producer: the
	// engine hands it their schedules and receives their fires through
	// FireFlow). Nil: no cron fires.
	Timetable Timetable
	Options   Options
}

// Engine advances workflow runs; one per leadership term.
type Engine struct {
	Deps
	defs     map[string]workflow.Config
	disabled map[string]bool
	active   map[string]map[string]*tracked // workflow → run id → an active run
	owners   map[string]runRef              // node execution key → its run
	dirty    map[runRef]bool
	retry    map[runRef]bool // commits that lost a race: redone after a short pause

	// scheduled is, per workflow with a schedule in the timetable, the
	// version of the schedule it was handed in with after it had none
	// (new, enabled, given a cron): a fire of an earlier version is
	// void, one of a later version but the current is not (fire).
	scheduled map[string]uint64
	version   uint64
	firesMu   sync.Mutex
	fires     []fireReq     // handed in by FireFlow, not yet taken (under firesMu)
	fired     chan struct{} // kicks Run: fires were handed in
	stopped   chan struct{} // closed when Run returns

	lost     map[string]string    // key → why its execution can no longer end (confirmed)
	suspects map[string]time.Time // key → when it was first found nowhere
	killed   map[string]time.Time // task id → when it was last killed
	timer    clock.Timer
	began    time.Time // when Run began: earlier instants are a catch-up's (FireObserver)
	retryAt  time.Time
	sweepAt  time.Time
	retainAt time.Time
}

type runRef struct{ wf, id string }

// tracked is what the engine remembers of an active run.
type tracked struct {
	state      workflow.RunState
	created    time.Time
	cron       bool
	backfill   bool // a backfill's run: outside maxConcurrentRuns
	cancelling bool
	deadline   time.Time
	keys       []string // of RUNNING nodes
	version    int64
}

// New builds an engine.
func New(d Deps) *Engine {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	d.Options.defaults()
	return &Engine{Deps: d, defs: map[string]workflow.Config{}, disabled: map[string]bool{},
		active: map[string]map[string]*tracked{}, owners: map[string]runRef{}, dirty: map[runRef]bool{},
		retry: map[runRef]bool{}, scheduled: map[string]uint64{}, lost: map[string]string{},
		suspects: map[string]time.Time{}, killed: map[string]time.Time{}, fired: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// Run advances runs until ctx ends (the leader context). It returns an
// error when a watch fails or a write is fenced (the term is over).
func (e *Engine) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		e.firesMu.Lock()
		close(e.stopped)
		e.firesMu.Unlock()
	}()
	e.began = e.Clock.Now()
	events, err := e.watch(ctx)
	if err != nil {
		return err
	}
	if err := e.load(ctx); err != nil {
		return err
	}
	if err := e.scheduleAll(ctx, true); err != nil {
		return err
	}
	e.timer = e.Clock.NewTimer(time.Hour)
	defer e.timer.Stop()
	for {
		if err := e.round(ctx); err != nil {
			return err
		}
		e.timer.Reset(max(e.nextWake().Sub(e.Clock.Now()), 0))
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("workflow engine: registry watch closed")
			}
			if err := e.handle(ctx, ev); err != nil {
				return err
			}
			if err := e.drain(ctx, events); err != nil {
				return err
			}
		case <-e.fired:
			if err := e.takeFires(ctx); err != nil {
				return err
			}
		case <-e.timer.C():
		}
	}
}

// drain handles the events already waiting, so a burst is decided once.
func (e *Engine) drain(ctx context.Context, events <-chan registry.WorkflowChange) error {
	for range 1024 {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil // Run notices on its next receive
			}
			if err := e.handle(ctx, ev); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// round does what is due: sweeps, retention, and every run marked dirty.
func (e *Engine) round(ctx context.Context) error {
	now := e.Clock.Now()
	for ref, t := range e.active {
		for id, tr := range t {
			if !tr.deadline.IsZero() && !now.Before(tr.deadline) && !tr.cancelling {
				e.dirty[runRef{ref, id}] = true
			}
		}
	}
	if !e.retryAt.IsZero() && !now.Before(e.retryAt) {
		for ref := range e.retry {
			e.dirty[ref] = true
		}
		clear(e.retry)
		e.retryAt = time.Time{}
	}
	if !now.Before(e.sweepAt) {
		e.sweepAt = now.Add(e.Options.Sweep)
		if err := e.sweep(ctx, now); err != nil {
			return err
		}
	}
	if !now.Before(e.retainAt) {
		e.retainAt = now.Add(e.Options.RetainEvery)
		if err := e.retain(ctx, now); err != nil {
			return err
		}
	}
	return e.processDirty(ctx)
}

// nextWake is when the loop must look again without an event.
func (e *Engine) nextWake() time.Time {
	next := e.sweepAt
	consider := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	consider(e.retainAt)
	consider(e.retryAt)
	for _, runs := range e.active {
		for _, tr := range runs {
			if !tr.cancelling {
				consider(tr.deadline)
			}
		}
	}
	return next
}

// track remembers an active run (and which node executions are its).
func (e *Engine) track(r workflow.Run) {
	ref := runRef{r.Workflow, r.ID}
	if r.State.Final() {
		e.forget(ref)
		return
	}
	t := e.active[r.Workflow]
	if t == nil {
		t = map[string]*tracked{}
		e.active[r.Workflow] = t
	}
	if old := t[r.ID]; old != nil {
		for _, k := range old.keys {
			delete(e.owners, k)
		}
	}
	tr := &tracked{state: r.State, created: r.CreatedAt, cron: r.Source == workflow.SourceCron, backfill: r.Source == workflow.SourceBackfill, cancelling: r.Cancel != nil,
		deadline: r.Deadline(), version: r.Version}
	for _, n := range r.Nodes {
		if n.State == workflow.NodeRunning {
			tr.keys = append(tr.keys, n.RunKey)
			e.owners[n.RunKey] = ref
		}
	}
	t[r.ID] = tr
}

func (e *Engine) forget(ref runRef) {
	if tr := e.active[ref.wf][ref.id]; tr != nil {
		for _, k := range tr.keys {
			delete(e.owners, k)
		}
		delete(e.active[ref.wf], ref.id)
		if len(e.active[ref.wf]) == 0 {
			delete(e.active, ref.wf)
		}
	}
	delete(e.dirty, ref)
	delete(e.retry, ref)
}

// mayBegin reports whether a QUEUED run may start now: its workflow is
// enabled and it is among the oldest queued runs that fit under
// maxConcurrentRuns. A backfill's runs stand apart: one begins at once
// (its backfill's concurrency bounds them, and it queues one only while
// no live run is in flight), and live runs neither count nor wait for
// them, so a backfill never delays a live run.
func (e *Engine) mayBegin(ref runRef) bool {
	d, ok := e.defs[ref.wf]
	if !ok || e.disabled[ref.wf] {
		return false
	}
	if tr := e.active[ref.wf][ref.id]; tr != nil && tr.backfill {
		return true
	}
	running := 0
	var queued []runRef
	for id, tr := range e.active[ref.wf] {
		switch {
		case tr.backfill:
		case tr.state == workflow.RunRunning:
			running++
		case tr.state == workflow.RunQueued && !tr.cancelling:
			queued = append(queued, runRef{ref.wf, id})
		}
	}
	sort.Slice(queued, func(i, j int) bool {
		a, b := e.active[ref.wf][queued[i].id], e.active[ref.wf][queued[j].id]
		if !a.created.Equal(b.created) {
			return a.created.Before(b.created)
		}
		return queued[i].id < queued[j].id
	})
	free := d.MaxConcurrentRuns - running
	for i := 0; i < free && i < len(queued); i++ {
		if queued[i] == ref {
			return true
		}
	}
	return false
}

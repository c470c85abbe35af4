package deadline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// inventoryTimeout bounds the read of the engine's agents.
const inventoryTimeout = 2 * time.Second

// Every is how often the Watcher reads the registry's state (default).
const Every = 5 * time.Second

// Catalog is the job catalog the Watcher reads configs from.
type Catalog interface {
	// Job returns the config of the job stored under key.
	Job(key string) (jobs.Config, bool)
	// Loaded reports whether the catalog holds the registry's jobs yet
	// (before, a pass would take every job for gone and forget the
	// alerts recorded for them).
	Loaded() bool
}

// Watcher is the leader loop raising deadline alerts and measuring start
// estimates. Create one per term.
type Watcher struct {
	Registry  *registry.Registry
	Clock     clock.Clock
	Log       *slog.Logger
	Location  *time.Location // the scheduler's zone, for jobs without one
	Every     time.Duration  // 0: Every
	Typical   *TypicalCache  // may be nil: estimates from timeouts only
	Sinks     []observe.Deadlines
	Estimates observe.Estimates // may be nil
	// Inventory lists the engine's agents: their total is what namespaces
	// with no capacity of their own share (nil: not known, State.Cluster).
	Inventory engine.Inventory
	// Catalog looks a job's config up by its registry key: the leader's
	// job catalog (scheduler.Catalog), shared read-only, so the watcher
	// keeps no copy of its own. nil: each pass decodes the registry's
	// jobs and drops them when it ends (tests, tools).
	Catalog Catalog

	tracker estimate.Tracker[execKey]
}

type cachedTypical struct {
	at time.Time
	t  estimate.Typical
}

// typicalTTL is how long a job's typical durations are reused.
const typicalTTL = time.Minute

// Run checks every w.Every until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	every := w.Every
	if every <= 0 {
		every = Every
	}
	t := w.Clock.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if err := w.Pass(ctx); err != nil && ctx.Err() == nil {
			w.Log.Warn("deadlines: check skipped", "err", err)
		}
		t.Reset(every)
	}
}

// errCatalogNotLoaded skips a pass until the term's catalog is loaded.
var errCatalogNotLoaded = errors.New("deadlines: the job catalog is not loaded yet")

// Pass reads the state once, raises the alerts due that no leader raised,
// forgets those of executions gone, and notes and measures estimates.
func (w *Watcher) Pass(ctx context.Context) error {
	now := w.Clock.Now()
	st, err := w.state(ctx)
	if err != nil {
		return err
	}
	var job Jobs
	switch {
	case w.Catalog == nil:
		if job, err = w.loadJobs(ctx); err != nil {
			return err
		}
	case !w.Catalog.Loaded():
		return errCatalogNotLoaded
	default:
		job = w.Catalog.Job
	}
	loc := w.Location
	if loc == nil {
		loc = time.UTC
	}
	due, live := Check(now, loc, job, waitingOf(st), runningOf(st))
	flows, runs, err := w.flowRuns(ctx)
	if err != nil {
		return err
	}
	due, live = CheckFlows(now, loc, func(k string) (workflow.Config, bool) { c, ok := flows[k]; return c, ok }, runs, due, live)
	sortAlerts(due)
	for _, a := range due {
		b, _ := json.Marshal(a)
		fresh, err := w.Registry.Schedule().MarkAlert(ctx, a.PathKey(), b)
		if err != nil {
			return err // fenced or unavailable: the next leader raises it
		}
		if !fresh {
			continue
		}
		w.Log.Warn("deadline missed", "kind", a.Kind, "namespace", a.Namespace, "job", a.Job, "message", a.Message)
		var hook observe.Hook
		if a.Workflow == "" {
			c, _ := job(registryKey(a))
			hook = observe.JobHook(c)
		} else if c, ok := flows[nsKey(a.Namespace, a.Workflow)]; ok {
			hook = observe.Hook{URL: c.WebhookURL, Format: c.WebhookFormat}
		}
		for _, s := range w.Sinks {
			s.DeadlineMissed(a, hook)
		}
	}
	if err := w.prune(ctx, live); err != nil {
		return err
	}
	w.measure(ctx, now, st, job)
	return nil
}

func registryKey(a observe.DeadlineAlert) string { return nsKey(a.Namespace, a.Job) }

// flowRuns reads the workflows with deadlines and their runs not final.
func (w *Watcher) flowRuns(ctx context.Context) (map[string]workflow.Config, []FlowRun, error) {
	stored, err := w.Registry.Flows().StoredWorkflows(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("deadlines: read the workflows: %w", err)
	}
	flows := map[string]workflow.Config{}
	var runs []FlowRun
	for _, s := range stored {
		var c workflow.Config
		if s.Decode(&c) != nil || c.StartDeadlineSeconds == 0 && c.RunDeadlineSeconds == 0 && c.RunDeadlineAt == "" {
			continue // a damaged entry (the registry's scan reports it), or no deadline
		}
		key := s.Key()
		flows[key] = c
		rs, err := w.Registry.Flows().WorkflowRuns(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("deadlines: read workflow %s's runs: %w", key, err)
		}
		for _, r := range rs {
			if !r.State.Final() {
				runs = append(runs, FlowRun{Workflow: key, Run: r})
			}
		}
	}
	return flows, runs, nil
}

func (w *Watcher) prune(ctx context.Context, live map[string]bool) error {
	keys, err := w.Registry.Schedule().AlertKeys(ctx)
	if err != nil {
		return fmt.Errorf("deadlines: list recorded alerts: %w", err)
	}
	var gone []string
	for _, k := range keys {
		if !live[k] {
			gone = append(gone, k)
		}
	}
	return w.Registry.Schedule().ForgetAlerts(ctx, gone)
}

func (w *Watcher) state(ctx context.Context) (State, error) {
	var st State
	var err error
	if st.Ready, err = w.Registry.Work().ReadyQueue(ctx); err != nil {
		return st, fmt.Errorf("deadlines: read the ready queue: %w", err)
	}
	if st.Failover, err = w.Registry.Work().FailoverQueue(ctx); err != nil {
		return st, fmt.Errorf("deadlines: read the failover queue: %w", err)
	}
	if st.Running, err = w.Registry.Work().RunningTasks(ctx); err != nil {
		return st, fmt.Errorf("deadlines: read the running tasks: %w", err)
	}
	if st.Retiring, err = w.Registry.Work().RetiringTasks(ctx); err != nil {
		return st, fmt.Errorf("deadlines: read the retiring tasks: %w", err)
	}
	recs, err := w.Registry.Tenancy().Namespaces(ctx)
	if err != nil {
		return st, fmt.Errorf("deadlines: read the namespaces: %w", err)
	}
	st.SetNamespaces(recs)
	if w.Inventory != nil {
		ictx, cancel := context.WithTimeout(ctx, inventoryTimeout)
		agents, err := w.Inventory.Agents(ictx)
		cancel()
		if err == nil {
			st.Cluster = ClusterOf(agents)
		} else {
			w.Log.Debug("deadlines: read the engine's agents", "err", err)
		}
	}
	return st, nil
}

// loadJobs decodes every job's configuration for one pass (no Jobs).
func (w *Watcher) loadJobs(ctx context.Context) (Jobs, error) {
	stored, err := w.Registry.Config().StoredJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("deadlines: read the jobs: %w", err)
	}
	m := make(map[string]jobs.Config, len(stored))
	for _, s := range stored {
		var c jobs.Config
		if s.Decode(&c) != nil {
			continue // a damaged entry: the registry's scan reports it
		}
		m[s.Key()] = c
	}
	return func(key string) (jobs.Config, bool) { c, ok := m[key]; return c, ok }, nil
}

func waitingOf(st State) []Waiting {
	out := make([]Waiting, 0, len(st.Ready))
	for _, r := range st.Ready {
		since := r.Since
		if r.NotBefore.After(since) {
			since = r.NotBefore // a fire staged ahead: due from its instant
		}
		out = append(out, Waiting{Job: r.Job, Since: since})
	}
	return out
}

func runningOf(st State) []Running {
	out := make([]Running, 0, len(st.Running))
	for job, shards := range st.Running {
		var r Running
		for _, e := range shards {
			if e.LaunchedAt.IsZero() {
				continue
			}
			if r.Job == "" || e.LaunchedAt.Before(r.Started) {
				r = Running{Job: job, TaskID: e.TaskID, Started: e.LaunchedAt}
			}
		}
		if r.Job != "" {
			out = append(out, r)
		}
	}
	return out
}

// measure notes each waiting execution's first estimate and, for those
// that started since the last pass, observes the estimate's error. The
// estimates are handed over as they are computed (eachPlace): a pass holds
// no map of the backlog's places, nor a list of the tracker's keys.
func (w *Watcher) measure(ctx context.Context, now time.Time, st State, cfg Jobs) {
	if w.Estimates == nil {
		return
	}
	eachPlace(now, st, cfg, func(key string) estimate.Typical { return w.Typical.Get(ctx, key) }, func(it *waitingItem, p Place) {
		if !it.failover() {
			w.tracker.Note(execKey{it.job, it.since}, clock.FromUnixNano(it.since), p.EstimatedStart)
		}
	})
	for k := range w.tracker.Unnoted {
		started, ok := startedAfter(st.Running[k.job], clock.FromUnixNano(k.since))
		if !ok {
			w.tracker.Forget(k) // left the queue without a start seen (ran and ended between passes, or removed)
			continue
		}
		if abs, ratio, ok := w.tracker.Started(k, started); ok {
			ns, _ := splitKey(k.job)
			w.Estimates.StartEstimateError(ns, abs, ratio)
		}
	}
}

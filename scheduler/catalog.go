package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/registry"
)

// Catalog is the leader's in-memory copy of the registry's configuration:
// apps, jobs and disable flags. It is loaded once and then kept current by
// following the store's change notifications, so writes made by the API of
// any scheduler instance (or by an operator's tool) reach the leader.
//
// One catalog can serve an instance's every term (Deps.Catalog): while the
// instance does not lead, Follow keeps it current on its own goroutine; a
// term takes it over (take), checks it against the registry in one pass
// that decodes only what differs (Sync), and applies the changes itself,
// on its loop, from then on; when the term ends Follow resumes. A takeover
// then decodes nothing it already holds (docs/cluster.md).
type Catalog struct {
	reg *registry.Registry

	// wmu serialises the writers: each reads the registry and stores what
	// it read under it, so a slower writer never stores an older read over
	// a newer one, and take waits for a standby change being applied.
	wmu    sync.Mutex
	taken  bool // a term applies the changes; Follow's are ignored (under wmu)
	synced int  // entries decoded by the last Sync (under wmu; for tests and logs)
	// queueMemo is the decoded ready and failover queues: Follow's (under
	// wmu) while no term holds the catalog, the holding term's loop's then.
	queueMemo registry.QueueMemo

	smu       sync.Mutex
	schedules map[string]*cron.Schedule // parsed crons by expression, and job when hashed (Plan)

	// apps and jobs are keyed by the record's key (the last element of its
	// stored path, the name a change carries), each with the fingerprint
	// of the bytes it was decoded from: one map a kind, so a job's name is
	// held once (its config's JobName is the key's string), and a Sync
	// compares what is stored against it without a map of stored paths
	// beside it. Written under wmu and mu, so a writer reads them under
	// wmu alone.
	mu           sync.RWMutex
	apps         map[string]held[app.Config]
	jobs         map[string]held[jobs.Config]
	disabledApps map[string]bool
	disabledJobs map[string]bool
	loaded       bool // a Load or Sync completed
}

// held is one stored app or job as the catalog decoded it, with a
// fingerprint of its stored bytes (registry.Stored.Sum).
type held[T any] struct {
	cfg T
	sum uint64
}

// NewCatalog makes an empty catalog: subscribe to the registry's
// configuration changes (WatchConfig), Load, then apply each change on the
// scheduler's loop.
func NewCatalog(reg *registry.Registry) *Catalog {
	return &Catalog{reg: reg}
}

// Load reads the whole configuration (Sync).
func (c *Catalog) Load(ctx context.Context) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.syncLocked(ctx)
}

// Sync brings the catalog up to date with the registry: it lists every
// stored app and job, decodes only those whose stored bytes differ from
// what it decoded before (or that are new), drops those gone, and reads
// the disable flags. On an empty catalog it is a full load; on one kept
// current it decodes nothing.
func (c *Catalog) Sync(ctx context.Context) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.syncLocked(ctx)
}

func (c *Catalog) syncLocked(ctx context.Context) error {
	appNodes, err := c.reg.Config().StoredApps(ctx)
	if err != nil {
		return fmt.Errorf("catalog: load apps: %w", err)
	}
	jobNodes, err := c.reg.Config().StoredJobs(ctx)
	if err != nil {
		return fmt.Errorf("catalog: load jobs: %w", err)
	}
	da, err := c.reg.Config().Disabled(ctx, "app")
	if err != nil {
		return fmt.Errorf("catalog: load disabled apps: %w", err)
	}
	dj, err := c.reg.Config().Disabled(ctx, "job")
	if err != nil {
		return fmt.Errorf("catalog: load disabled jobs: %w", err)
	}
	apps, heldApps := syncKind(appNodes, c.apps, decodeApp)
	if apps.err != nil {
		return fmt.Errorf("catalog: load apps: %w", apps.err)
	}
	js, heldJobs := syncKind(jobNodes, c.jobs, c.decodeJob)
	if js.err != nil {
		return fmt.Errorf("catalog: load jobs: %w", js.err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apps == nil {
		c.apps, c.jobs = make(map[string]held[app.Config], len(appNodes)), make(map[string]held[jobs.Config], len(jobNodes))
	}
	apps.applyTo(c.apps, appNodes, heldApps)
	js.applyTo(c.jobs, jobNodes, heldJobs)
	c.disabledApps, c.disabledJobs = da, dj
	c.loaded = true
	c.synced = len(apps.keys) + len(js.keys)
	return nil
}

// decoded is what a Sync decoded of one kind, to store under mu.
type decoded[T any] struct {
	keys []string
	vals []held[T]
	err  error
}

// syncKind decodes the listed records of one kind whose stored bytes
// differ from what m holds under their key (or that m lacks), and counts
// the listed keys m holds (under wmu). A record that does not decode is
// set aside and the others load (registry/damage.go); m's value for it,
// if any, stays.
func syncKind[T any](nodes []registry.Stored, m map[string]held[T], decode func(registry.Stored) (T, string, error)) (d decoded[T], heldN int) {
	if len(m) == 0 { // a full load: room for everything at once (a job's config is large)
		d.keys, d.vals = make([]string, 0, len(nodes)), make([]held[T], 0, len(nodes))
	}
	for _, n := range nodes {
		sum := n.Sum()
		old, ok := m[n.Key()]
		if ok {
			heldN++
			if old.sum == sum {
				continue
			}
		}
		v, name, err := decode(n)
		if n.SetAside(err) {
			continue
		}
		if err != nil {
			d.err = err
			return d, heldN
		}
		key := n.Key()
		if key == name {
			key = name // the decoded name's string, not the listed path's, is kept
		}
		d.keys, d.vals = append(d.keys, key), append(d.vals, held[T]{cfg: v, sum: sum})
	}
	return d, heldN
}

// applyTo stores what was decoded in m and drops m's keys no longer
// listed (under mu). Every listed key is distinct: when m held heldN of
// them and holds no other, nothing was deleted, and no set of the listed
// keys is built (the usual case at a takeover).
func (d decoded[T]) applyTo(m map[string]held[T], nodes []registry.Stored, heldN int) {
	if heldN < len(m) {
		listed := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			listed[n.Key()] = true
		}
		for k := range m {
			if !listed[k] {
				delete(m, k)
			}
		}
	}
	for i, k := range d.keys {
		m[k] = d.vals[i]
	}
}

func decodeApp(n registry.Stored) (app.Config, string, error) {
	var a app.Config
	err := n.Decode(&a)
	return a, a.AppName, err
}

// decodeJob decodes a job's stored configuration as the catalog holds it:
// the strings jobs repeat shared, its crons parsed (now, off a term's
// start).
func (c *Catalog) decodeJob(n registry.Stored) (jobs.Config, string, error) {
	var j jobs.Config
	if err := n.Decode(&j); err != nil {
		return j, "", err
	}
	shareStrings(&j)
	_, _ = c.Plan(j, nil, 0)
	return j, j.JobName, nil
}

// apply applies one configuration change to the catalog (a reload of
// what it names).
func (c *Catalog) apply(ctx context.Context, ch registry.ConfigChange) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.applyLocked(ctx, ch)
}

// applyLocked is apply under wmu. The reloads read under wmu too.
func (c *Catalog) applyLocked(ctx context.Context, ch registry.ConfigChange) error {
	switch ch.Kind {
	case registry.ConfigAll:
		return c.syncLocked(ctx)
	case registry.ConfigApp:
		return c.reloadApp(ctx, ch.Name)
	case registry.ConfigJob:
		return c.reloadJob(ctx, ch.Name)
	case registry.ConfigAppDisabled, registry.ConfigJobDisabled:
		return c.reloadFlag(ctx, ch)
	}
	return nil
}

func (c *Catalog) reloadFlag(ctx context.Context, ch registry.ConfigChange) error {
	kind := "job"
	if ch.Kind == registry.ConfigAppDisabled {
		kind = "app"
	}
	disabled, err := c.reg.Config().IsDisabled(ctx, kind, ch.Name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.disabledJobs
	if kind == "app" {
		m = c.disabledApps
	}
	if m == nil {
		m = map[string]bool{}
		if kind == "app" {
			c.disabledApps = m
		} else {
			c.disabledJobs = m
		}
	}
	if disabled {
		m[ch.Name] = true
	} else {
		delete(m, ch.Name)
	}
	return nil
}

func (c *Catalog) reloadApp(ctx context.Context, name string) error {
	n, err := c.reg.Config().StoredApp(ctx, name)
	var a app.Config
	if err == nil {
		a, _, err = decodeApp(n)
		if n.SetAside(err) {
			err = fmt.Errorf("%w: %w", registry.ErrAppNotFound, err) // set aside: held as absent
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if err != nil {
		// A read that failed leaves nothing a Sync could take as current.
		delete(c.apps, name)
		return ignoreNotFound(err)
	}
	c.apps[keyOf(name, a.AppName)] = held[app.Config]{cfg: a, sum: n.Sum()}
	return nil
}

func (c *Catalog) reloadJob(ctx context.Context, name string) error {
	n, err := c.reg.Config().StoredJob(ctx, name)
	var j jobs.Config
	if err == nil {
		j, _, err = c.decodeJob(n)
		if n.SetAside(err) {
			err = fmt.Errorf("%w: %w", registry.ErrJobNotFound, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if err != nil {
		delete(c.jobs, name)
		return ignoreNotFound(err)
	}
	c.jobs[keyOf(name, j.JobName)] = held[jobs.Config]{cfg: j, sum: n.Sum()}
	return nil
}

// keyOf is the key a record is held under: the name its change carried,
// as the decoded name's string when they are equal (the name is then held
// once, by the config).
func keyOf(key, decoded string) string {
	if key == decoded {
		return decoded
	}
	return key
}

// init makes the maps of a catalog never loaded (under wmu and mu).
func (c *Catalog) init() {
	if c.apps == nil {
		c.apps, c.jobs = map[string]held[app.Config]{}, map[string]held[jobs.Config]{}
	}
}

func ignoreNotFound(err error) error {
	if errors.Is(err, registry.ErrAppNotFound) || errors.Is(err, registry.ErrJobNotFound) {
		return nil
	}
	return err
}

// Job returns a job's config.
func (c *Catalog) Job(name string) (jobs.Config, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	j, ok := c.jobs[name]
	return j.cfg, ok
}

// Loaded reports whether the catalog holds the registry's configuration
// (Load or Sync has completed once).
func (c *Catalog) Loaded() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.loaded
}

// App returns an app's config.
func (c *Catalog) App(name string) (app.Config, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.apps[name]
	return a.cfg, ok
}

// Runnable reports whether a job may run now (jobs.CanRun) and returns
// its config and the app it runs under (app.HTTPOnly for an HTTP job
// without one).
func (c *Catalog) Runnable(job string) (jobs.Config, app.Config, bool) {
	j, a, why := c.Lookup(job)
	return j, a, why == jobs.Runnable
}

// runnableStored is Runnable with the fingerprint of the job's stored
// configuration (registry.Stored.Sum) it decoded, read together (0: none
// known): the producer's fires carry it (registry.CronFire.Config).
func (c *Catalog) runnableStored(job string) (jobs.Config, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h, ok := c.jobs[job]
	j := h.cfg
	if !ok {
		return j, 0, false
	}
	f := jobs.Facts{Job: &j, JobDisabled: c.disabledJobs[job], AppDisabled: c.disabledApps[j.AppName]}
	if a, ok := c.apps[j.AppName]; ok {
		f.App = &a.cfg
	}
	return j, h.sum, jobs.CanRun(f) == jobs.Runnable
}

// Lookup returns a job's config, the app it runs under, and whether it
// may run now (round.Catalog).
func (c *Catalog) Lookup(job string) (jobs.Config, app.Config, jobs.Runnability) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h, ok := c.jobs[job]
	j := h.cfg
	if !ok {
		return j, app.Config{}, jobs.JobMissing
	}
	f := jobs.Facts{Job: &j, JobDisabled: c.disabledJobs[job], AppDisabled: c.disabledApps[j.AppName]}
	if a, ok := c.apps[j.AppName]; ok {
		f.App = &a.cfg
	}
	return j, jobs.AppOf(j, f.App), jobs.CanRun(f)
}

// JobNames lists every job name.
func (c *Catalog) JobNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.jobs))
	for n := range c.jobs {
		out = append(out, n)
	}
	return out
}

// JobsOfApp lists the jobs of one app.
func (c *Catalog) JobsOfApp(appName string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for n, j := range c.jobs {
		if j.cfg.AppName == appName {
			out = append(out, n)
		}
	}
	return out
}

// AppActive reports whether an app exists and is not disabled.
func (c *Catalog) AppActive(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.apps[name]
	return ok && !c.disabledApps[name]
}

// JobDisabled reports whether a job's disable flag is set.
func (c *Catalog) JobDisabled(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.disabledJobs[name]
}

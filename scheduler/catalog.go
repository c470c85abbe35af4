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
	taken  bool                // a term applies the changes; Follow's are ignored (under wmu)
	sums   map[string]entrySum // stored path → what was decoded from it (written under wmu and mu)
	synced int                 // entries decoded by the last Sync (under wmu; for tests and logs)
	// queueMemo is the decoded ready and failover queues: Follow's (under
	// wmu) while no term holds the catalog, the holding term's loop's then.
	queueMemo registry.QueueMemo

	smu       sync.Mutex
	schedules map[string]*cron.Schedule // parsed crons by expression, and job when hashed (Plan)

	mu           sync.RWMutex
	apps         map[string]app.Config
	jobs         map[string]jobs.Config
	disabledApps map[string]bool
	disabledJobs map[string]bool
	loaded       bool // a Load or Sync completed
}

// entrySum is one stored app or job as the catalog decoded it: its name
// and a fingerprint of its stored bytes (registry.Stored.Sum).
type entrySum struct {
	name string
	sum  uint64
	job  bool
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
	if c.sums == nil {
		c.sums = make(map[string]entrySum, len(appNodes)+len(jobNodes))
	}
	// Every listed path is distinct: when each one was held already and
	// the catalog holds no other, nothing was deleted (no set of the
	// listed paths is built, the usual case at a takeover).
	held := 0
	var apps []app.Config
	var js []jobs.Config
	var appSums, jobSums []entrySum
	var appPaths, jobPaths []string
	if len(c.sums) == 0 { // a full load: room for everything at once (a job's config is large)
		js, jobSums, jobPaths = make([]jobs.Config, 0, len(jobNodes)), make([]entrySum, 0, len(jobNodes)), make([]string, 0, len(jobNodes))
	}
	for _, n := range appNodes {
		sum := n.Sum()
		old, ok := c.sums[n.Path()]
		if ok {
			held++
		}
		if ok && old.sum == sum && !old.job {
			continue
		}
		var a app.Config
		err := n.Decode(&a)
		if n.SetAside(err) {
			continue // it does not decode: the others load (registry/damage.go)
		}
		if err != nil {
			return fmt.Errorf("catalog: load apps: %w", err)
		}
		apps, appSums, appPaths = append(apps, a), append(appSums, entrySum{name: a.AppName, sum: sum}), append(appPaths, n.Path())
	}
	for _, n := range jobNodes {
		sum := n.Sum()
		old, ok := c.sums[n.Path()]
		if ok {
			held++
		}
		if ok && old.sum == sum && old.job {
			continue
		}
		var j jobs.Config
		err := n.Decode(&j)
		if n.SetAside(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("catalog: load jobs: %w", err)
		}
		shareStrings(&j)
		_, _ = c.Plan(j, nil, 0) // parsed now, off a term's start
		js, jobSums, jobPaths = append(js, j), append(jobSums, entrySum{name: j.JobName, sum: sum, job: true}), append(jobPaths, n.Path())
	}
	var gone map[string]bool // held paths no longer listed
	if held < len(c.sums) {
		listed := make(map[string]bool, len(appNodes)+len(jobNodes))
		for _, n := range appNodes {
			listed[n.Path()] = true
		}
		for _, n := range jobNodes {
			listed[n.Path()] = true
		}
		gone = map[string]bool{}
		for p := range c.sums {
			if !listed[p] {
				gone[p] = true
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apps == nil {
		c.apps, c.jobs = make(map[string]app.Config, len(appNodes)), make(map[string]jobs.Config, len(jobNodes))
	}
	for p := range gone {
		c.forgetLocked(c.sums[p])
		delete(c.sums, p)
	}
	for i, a := range apps {
		c.replaceLocked(appPaths[i], appSums[i])
		c.apps[a.AppName] = a
	}
	for i, j := range js {
		c.replaceLocked(jobPaths[i], jobSums[i])
		c.jobs[j.JobName] = j
	}
	c.disabledApps, c.disabledJobs = da, dj
	c.loaded = true
	c.synced = len(apps) + len(js)
	return nil
}

// replaceLocked records what was decoded from path, forgetting what an
// earlier entry there named if the name changed (under wmu and mu).
func (c *Catalog) replaceLocked(path string, e entrySum) {
	if old, ok := c.sums[path]; ok && (old.name != e.name || old.job != e.job) {
		c.forgetLocked(old)
	}
	c.sums[path] = e
}

// forgetLocked drops what an entry named (under mu).
func (c *Catalog) forgetLocked(e entrySum) {
	if e.job {
		delete(c.jobs, e.name)
	} else {
		delete(c.apps, e.name)
	}
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
		err = n.Decode(&a)
		if n.SetAside(err) {
			err = fmt.Errorf("%w: %w", registry.ErrAppNotFound, err) // set aside: held as absent
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if err != nil {
		delete(c.apps, name)
		c.dropSum(name, false)
		return ignoreNotFound(err)
	}
	c.replaceLocked(n.Path(), entrySum{name: a.AppName, sum: n.Sum()})
	c.apps[name] = a
	return nil
}

func (c *Catalog) reloadJob(ctx context.Context, name string) error {
	n, err := c.reg.Config().StoredJob(ctx, name)
	var j jobs.Config
	if err == nil {
		err = n.Decode(&j)
		if n.SetAside(err) {
			err = fmt.Errorf("%w: %w", registry.ErrJobNotFound, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if err != nil {
		delete(c.jobs, name)
		c.dropSum(name, true)
		return ignoreNotFound(err)
	}
	shareStrings(&j)
	_, _ = c.Plan(j, nil, 0)
	c.replaceLocked(n.Path(), entrySum{name: j.JobName, sum: n.Sum(), job: true})
	c.jobs[name] = j
	return nil
}

// init makes the maps of a catalog never loaded (under wmu and mu).
func (c *Catalog) init() {
	if c.sums == nil {
		c.sums = map[string]entrySum{}
	}
	if c.apps == nil {
		c.apps, c.jobs = map[string]app.Config{}, map[string]jobs.Config{}
	}
}

// dropSum forgets the fingerprint of what was decoded for name (under
// wmu): a read that failed leaves nothing a Sync could take as current.
func (c *Catalog) dropSum(name string, job bool) {
	p := registry.AppsPath + "/" + name
	if job {
		p = registry.JobsPath + "/" + name
	}
	if e, ok := c.sums[p]; ok && e.job == job {
		delete(c.sums, p)
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
	return j, ok
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
	return a, ok
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
	j, ok := c.jobs[job]
	if !ok {
		return j, 0, false
	}
	f := jobs.Facts{Job: &j, JobDisabled: c.disabledJobs[job], AppDisabled: c.disabledApps[j.AppName]}
	if a, ok := c.apps[j.AppName]; ok {
		f.App = &a
	}
	var sum uint64
	if e, ok := c.sums[registry.JobsPath+"/"+job]; ok && e.job && e.name == job {
		sum = e.sum
	}
	return j, sum, jobs.CanRun(f) == jobs.Runnable
}

// Lookup returns a job's config, the app it runs under, and whether it
// may run now (round.Catalog).
func (c *Catalog) Lookup(job string) (jobs.Config, app.Config, jobs.Runnability) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	j, ok := c.jobs[job]
	if !ok {
		return j, app.Config{}, jobs.JobMissing
	}
	f := jobs.Facts{Job: &j, JobDisabled: c.disabledJobs[job], AppDisabled: c.disabledApps[j.AppName]}
	if a, ok := c.apps[j.AppName]; ok {
		f.App = &a
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
		if j.AppName == appName {
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

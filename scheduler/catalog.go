package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
)

// Catalog is the leader's in-memory copy of the registry's configuration:
// apps, jobs and disable flags. It is loaded once and then kept current by
// following the store's change notifications, so writes made by the API of
// any scheduler instance (or by an operator's tool) reach the leader.
type Catalog struct {
	reg *registry.Registry

	mu           sync.RWMutex
	apps         map[string]app.Config
	jobs         map[string]jobs.Config
	disabledApps map[string]bool
	disabledJobs map[string]bool
}

// NewCatalog makes an empty catalog: subscribe to the registry's
// configuration changes (WatchConfig), Load, then apply each change on the
// scheduler's loop.
func NewCatalog(reg *registry.Registry) *Catalog {
	return &Catalog{reg: reg}
}

// Load reads the whole configuration.
func (c *Catalog) Load(ctx context.Context) error {
	apps, err := c.reg.Apps(ctx)
	if err != nil {
		return fmt.Errorf("catalog: load apps: %w", err)
	}
	js, err := c.reg.Jobs(ctx)
	if err != nil {
		return fmt.Errorf("catalog: load jobs: %w", err)
	}
	da, err := c.reg.Disabled(ctx, "app")
	if err != nil {
		return fmt.Errorf("catalog: load disabled apps: %w", err)
	}
	dj, err := c.reg.Disabled(ctx, "job")
	if err != nil {
		return fmt.Errorf("catalog: load disabled jobs: %w", err)
	}
	am := make(map[string]app.Config, len(apps))
	for _, a := range apps {
		am[a.AppName] = a
	}
	jm := make(map[string]jobs.Config, len(js))
	for _, j := range js {
		jm[j.JobName] = j
	}
	c.mu.Lock()
	c.apps, c.jobs, c.disabledApps, c.disabledJobs = am, jm, da, dj
	c.mu.Unlock()
	return nil
}

// apply applies one configuration change to the catalog (a reload of
// what it names).
func (c *Catalog) apply(ctx context.Context, ch registry.ConfigChange) error {
	switch ch.Kind {
	case registry.ConfigAll:
		return c.Load(ctx)
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
	disabled, err := c.reg.IsDisabled(ctx, kind, ch.Name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.disabledJobs
	if kind == "app" {
		m = c.disabledApps
	}
	if disabled {
		m[ch.Name] = true
	} else {
		delete(m, ch.Name)
	}
	return nil
}

func (c *Catalog) reloadApp(ctx context.Context, name string) error {
	a, err := c.reg.App(ctx, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.apps, name)
		return ignoreNotFound(err)
	}
	c.apps[name] = a
	return nil
}

func (c *Catalog) reloadJob(ctx context.Context, name string) error {
	j, err := c.reg.Job(ctx, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.jobs, name)
		return ignoreNotFound(err)
	}
	c.jobs[name] = j
	return nil
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

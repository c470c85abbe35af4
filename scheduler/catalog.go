package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
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

// Change names what changed: Kind is "app", "job", "disable-app",
// "disable-job" or "all" (a resync: everything may have changed).
type Change struct {
	Kind string
	Name string
}

// NewCatalog makes an empty catalog; call Watch, Load, then Follow.
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

// Watch subscribes to the store; call it before Load so no change made
// between the two is missed, then pass the channel to Follow.
func (c *Catalog) Watch(ctx context.Context) (cfg, dis <-chan store.Event, err error) {
	kv := c.reg.KV()
	if cfg, err = kv.Watch(ctx, "/config"); err != nil {
		return nil, nil, fmt.Errorf("catalog: watch /config: %w", err)
	}
	if dis, err = kv.Watch(ctx, "/state/disable"); err != nil {
		return nil, nil, fmt.Errorf("catalog: watch /state/disable: %w", err)
	}
	return cfg, dis, nil
}

// Follow hands each store event to onEvent, until ctx ends or a channel
// closes. It does not apply them: the scheduler applies each one on its
// loop (apply), together with what the change means for running tasks, so
// a launch round never sees a configuration whose change the loop has not
// handled yet (it would otherwise launch with the new configuration, then
// kill what it launched as belonging to the old one).
func (c *Catalog) Follow(ctx context.Context, cfg, dis <-chan store.Event, onEvent func(store.Event)) error {
	for {
		var ev store.Event
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok = <-cfg:
		case ev, ok = <-dis:
		}
		if !ok {
			return fmt.Errorf("catalog: watch closed")
		}
		onEvent(ev)
	}
}

// apply applies one store event to the catalog and names what changed
// (Kind "" when the event is not about the configuration).
func (c *Catalog) apply(ctx context.Context, ev store.Event) (Change, error) {
	if ev.Type == store.EventResync {
		return Change{Kind: "all"}, c.Load(ctx)
	}
	parts := strings.Split(strings.TrimPrefix(ev.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "config" && parts[1] == "app":
		return Change{Kind: "app", Name: parts[2]}, c.reloadApp(ctx, parts[2])
	case len(parts) == 3 && parts[0] == "config" && parts[1] == "job":
		return Change{Kind: "job", Name: parts[2]}, c.reloadJob(ctx, parts[2])
	case len(parts) == 4 && parts[0] == "state" && parts[1] == "disable":
		disabled := ev.Type == store.EventPut
		c.mu.Lock()
		m := c.disabledJobs
		if parts[2] == "app" {
			m = c.disabledApps
		}
		if disabled {
			m[parts[3]] = true
		} else {
			delete(m, parts[3])
		}
		c.mu.Unlock()
		return Change{Kind: "disable-" + parts[2], Name: parts[3]}, nil
	}
	return Change{}, nil
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
	if isNotFound(err) {
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

// Runnable reports whether a job exists, its app exists, and neither is
// disabled; it returns both configs. An HTTP job without an app runs under
// app.HTTPOnly (no package, a small executor).
func (c *Catalog) Runnable(job string) (jobs.Config, app.Config, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	j, ok := c.jobs[job]
	if !ok || c.disabledJobs[job] {
		return j, app.Config{}, false
	}
	if j.AppName == "" {
		return j, app.HTTPOnly(), j.JobType == jobs.TypeHTTP
	}
	a, ok := c.apps[j.AppName]
	if !ok || c.disabledApps[j.AppName] {
		return j, a, false
	}
	return j, a, true
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

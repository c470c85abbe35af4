package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/store"
)

// AddApp registers a new app.
func (cf Config) AddApp(ctx context.Context, c app.Config) error {
	err := cf.r.commit(ctx, createJSON(appPath(c.AppName), c))
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: App '%s' already existed.", ErrAppExists, c.AppName)
	}
	return err
}

// UpdateApp replaces an existing app's config.
func (cf Config) UpdateApp(ctx context.Context, c app.Config) error {
	err := cf.r.commit(ctx, setJSON(appPath(c.AppName), c, store.AnyVersion))
	if errors.Is(err, store.ErrNotFound) {
		return appNotFound(c.AppName)
	}
	return err
}

// SetAppURL points an existing app at a new package URL, keeping its other
// fields even when they change concurrently (compare-and-set on the node's
// version). It returns the app as written; the same URL again writes nothing.
func (cf Config) SetAppURL(ctx context.Context, name, url string) (app.Config, error) {
	for range maxCASRetries {
		n, err := cf.r.kv.Get(ctx, appPath(name))
		if errors.Is(err, store.ErrNotFound) {
			return app.Config{}, appNotFound(name)
		}
		if err != nil {
			return app.Config{}, err
		}
		var c app.Config
		if err := decodeAt(n.Path, n.Value, &c); err != nil {
			return c, err
		}
		if c.AppURL == url {
			return c, nil // nothing changes: no write, so no reschedule of the app's jobs
		}
		c.AppURL = url
		err = cf.r.commit(ctx, setJSON(n.Path, c, n.Version))
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, store.ErrNotFound):
			return app.Config{}, appNotFound(name)
		case !errors.Is(err, store.ErrConflict):
			return app.Config{}, err
		}
	}
	return app.Config{}, fmt.Errorf("%w: app '%s' kept changing while its appURL was set", ErrConflict, name)
}

// App returns one app.
func (cf Config) App(ctx context.Context, name string) (app.Config, error) {
	var c app.Config
	n, err := cf.r.kv.Get(ctx, appPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return c, appNotFound(name)
	}
	if err != nil {
		return c, err
	}
	if err := decodeAt(n.Path, n.Value, &c); err != nil {
		return c, err
	}
	return c, nil
}

// Apps lists every app, sorted by name.
func (cf Config) Apps(ctx context.Context) ([]app.Config, error) {
	return listJSON[app.Config](ctx, cf.r, AppsPath)
}

// DeleteApp removes an app, its jobs, their state and its disable flag in
// one commit (an app whose stored config does not decode too; its jobs
// are those that decode). Running tasks are killed by the leader, which
// sees the deletions through its watch.
func (cf Config) DeleteApp(ctx context.Context, name string) ([]string, error) {
	if _, err := cf.App(ctx, name); err != nil && !errors.Is(err, ErrDamaged) {
		return nil, err
	}
	all, err := cf.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	ops := []store.Op{store.Delete(appPath(name), store.AnyVersion), store.Delete(disabledAppPath+"/"+name, store.AnyVersion)}
	var deleted []string
	for _, j := range all {
		if j.AppName == name {
			deleted = append(deleted, j.JobName)
			ops = append(ops, jobDeleteOps(j.JobName)...)
		}
	}
	if err := cf.r.commit(ctx, ops...); err != nil {
		return deleted, err
	}
	cf.r.damage.Forget(cf.r.storePath(appPath(name)))
	return deleted, nil
}

// StoredApps lists every app's stored configuration undecoded
// (StoredJobs).
func (cf Config) StoredApps(ctx context.Context) ([]Stored, error) {
	nodes, err := cf.r.kv.List(ctx, AppsPath)
	return storedAll(cf.r, nodes), err
}

// StoredApp reads one app's stored configuration undecoded (StoredJob).
func (cf Config) StoredApp(ctx context.Context, name string) (Stored, error) {
	n, err := cf.r.kv.Get(ctx, appPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return stored(cf.r, n), appNotFound(name)
	}
	return stored(cf.r, n), err
}

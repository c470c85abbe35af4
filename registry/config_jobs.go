package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// AddJob registers a new job. Its app must exist and, when the job runs the
// app's package, have an appURL; an HTTP job may name no app. It records
// no registration instant (AddJobAt does).
func (cf Config) AddJob(ctx context.Context, c jobs.Config) error {
	return cf.AddJobAt(ctx, c, time.Time{})
}

// AddJobAt is AddJob recording at as the job's registration instant
// (JobRegisteredAt), in the same commit.
func (cf Config) AddJobAt(ctx context.Context, c jobs.Config, at time.Time) error {
	return cf.r.withApp(ctx, c, func(check []store.Op) error {
		ops := append(check, createJSON(jobPath(c.JobName), c))
		if !at.IsZero() {
			ops = append(ops, store.Put(RegisteredJobPath+"/"+c.JobName, []byte(at.UTC().Format(time.RFC3339Nano))),
				store.Put(gatePath(c.JobName), gateAt(at))) // a fire of a job of this name before it is void (gate.go)
		}
		err := cf.r.commit(ctx, ops...)
		if errors.Is(err, store.ErrExists) {
			return fmt.Errorf("%w: Job '%s' already existed.", ErrJobExists, c.JobName)
		}
		return err
	})
}

// UpdateJob replaces an existing job's config and clears its pending
// queues (the leader kills its running tasks and reschedules it). It
// records no change instant (UpdateJobAt does).
func (cf Config) UpdateJob(ctx context.Context, c jobs.Config) error {
	return cf.UpdateJobAt(ctx, c, time.Time{})
}

// UpdateJobAt is UpdateJob recording at as the job's last change
// (JobsChangedAt), in the same commit.
func (cf Config) UpdateJobAt(ctx context.Context, c jobs.Config, at time.Time) error {
	if _, err := cf.Job(ctx, c.JobName); err != nil {
		return err
	}
	return cf.r.withApp(ctx, c, func(check []store.Op) error {
		ops := append(append(check,
			setJSON(jobPath(c.JobName), c, store.AnyVersion)),
			append(readyDeleteOps(c.JobName),
				store.Delete(failoverPath+"/"+c.JobName, store.AnyVersion))...)
		if !at.IsZero() {
			ops = append(ops, store.Put(gatePath(c.JobName), gateAt(at)))
		}
		err := cf.r.commit(ctx, ops...)
		if errors.Is(err, store.ErrNotFound) {
			if _, jerr := cf.Job(ctx, c.JobName); jerr != nil {
				return jerr // the job itself went away
			}
		}
		return err
	})
}

// Job returns one job.
func (cf Config) Job(ctx context.Context, name string) (jobs.Config, error) {
	var c jobs.Config
	n, err := cf.r.kv.Get(ctx, jobPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return c, jobNotFound(name)
	}
	if err != nil {
		return c, err
	}
	if err := decodeAt(n.Path, n.Value, &c); err != nil {
		return c, err
	}
	return c, nil
}

// Jobs lists every job, sorted by name.
func (cf Config) Jobs(ctx context.Context) ([]jobs.Config, error) {
	return listJSON[jobs.Config](ctx, cf.r, JobsPath)
}

// StoredJobs lists every job's stored configuration undecoded, sorted by
// path (Stored.Key is the job's key); Stored.Decode decodes one. A reader
// that keeps a copy compares their Sums to tell what changed without
// decoding every job (scheduler.Catalog.Sync).
func (cf Config) StoredJobs(ctx context.Context) ([]Stored, error) {
	nodes, err := cf.r.kv.List(ctx, JobsPath)
	return storedAll(cf.r, nodes), err
}

// StoredJob reads one job's stored configuration undecoded (its path is
// JobsPath/name, as StoredJobs lists it); ErrJobNotFound when none.
func (cf Config) StoredJob(ctx context.Context, name string) (Stored, error) {
	n, err := cf.r.kv.Get(ctx, jobPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return stored(cf.r, n), jobNotFound(name)
	}
	return stored(cf.r, n), err
}

// JobCount counts registered jobs without decoding them.
func (cf Config) JobCount(ctx context.Context) (int, error) {
	names, err := cf.r.kv.Children(ctx, JobsPath)
	return len(names), err
}

// JobKeys lists the registered jobs' names (keys, in the scheduler's
// view) without decoding them.
func (cf Config) JobKeys(ctx context.Context) ([]string, error) {
	return cf.r.kv.Children(ctx, JobsPath)
}

// DeleteJob deregisters a job and clears its queues and disable flag; a
// job whose stored config does not decode is deleted too.
func (cf Config) DeleteJob(ctx context.Context, name string) error {
	if _, err := cf.Job(ctx, name); err != nil && !errors.Is(err, ErrDamaged) {
		return err
	}
	if err := cf.r.commit(ctx, jobDeleteOps(name)...); err != nil {
		return err
	}
	cf.r.damage.Forget(cf.r.storePath(jobPath(name)))
	return cf.r.Tenancy().forgetSecretFetches(ctx, namespace.Key(cf.r.ns, name))
}

// SetDisabled sets or clears a disable flag. kind is "app" or "job".
// Disabling a job clears its pending executions and closes its gate in
// the same commit, so no fire is left pending and none lands while it is
// off (gate.go). Enabling a job at a known instant records it as the
// job's last change (JobsChangedAt): a takeover's catch-up does not
// replay the instants it spent disabled, and a fire of an instant before
// it is void.
func (cf Config) SetDisabled(ctx context.Context, kind, name string, disabled bool, now time.Time) error {
	p := "/state/disable/" + kind + "/" + name
	if disabled {
		ops := []store.Op{store.Put(p, []byte(now.UTC().Format(time.RFC3339)))}
		if kind == "job" {
			ops = append(append(append(ops, store.Put(gatePath(name), gateOffValue(now))),
				readyDeleteOps(name)...),
				store.Delete(failoverPath+"/"+name, store.AnyVersion))
		}
		return cf.r.commit(ctx, ops...)
	}
	ops := []store.Op{store.Delete(p, store.AnyVersion)}
	if kind == "job" {
		ops = append(ops, store.Put(gatePath(name), gateAt(now)))
	}
	return cf.r.commit(ctx, ops...)
}

// Disabled lists the names disabled of a kind ("app" or "job").
func (cf Config) Disabled(ctx context.Context, kind string) (map[string]bool, error) {
	names, err := cf.r.kv.Children(ctx, "/state/disable/"+kind)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// IsDisabled reports one flag.
func (cf Config) IsDisabled(ctx context.Context, kind, name string) (bool, error) {
	_, err := cf.r.kv.Get(ctx, "/state/disable/"+kind+"/"+name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// CanRun reads what jobs.CanRun looks at for one job and applies it: the
// one "may this job run now" rule, as the API and the workflow engine ask
// it (the launcher asks its catalog, which holds the same facts).
func (cf Config) CanRun(ctx context.Context, name string) (jobs.Config, jobs.Runnability, error) {
	j, err := cf.Job(ctx, name)
	if errors.Is(err, ErrJobNotFound) {
		return j, jobs.JobMissing, nil
	}
	if err != nil {
		return j, jobs.JobMissing, err
	}
	f := jobs.Facts{Job: &j}
	if f.JobDisabled, err = cf.IsDisabled(ctx, "job", name); err != nil {
		return j, jobs.JobMissing, err
	}
	if j.AppName != "" {
		a, err := cf.App(ctx, j.AppName)
		switch {
		case err == nil:
			f.App = &a
		case !errors.Is(err, ErrAppNotFound):
			return j, jobs.JobMissing, err
		}
		if f.AppDisabled, err = cf.IsDisabled(ctx, "app", j.AppName); err != nil {
			return j, jobs.JobMissing, err
		}
	}
	return j, jobs.CanRun(f), nil
}

// JobsChangedAt returns, per job, the later of its registration and its
// last config change or enable as recorded (AddJobAt, UpdateJobAt,
// SetDisabled); a job with neither recorded is absent, and so is a value
// that does not parse.
func (cf Config) JobsChangedAt(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, dir := range []string{RegisteredJobPath, ChangedJobPath} {
		nodes, err := cf.r.kv.List(ctx, dir)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			t, err := time.Parse(time.RFC3339Nano, string(n.Value))
			if err != nil {
				continue
			}
			name := lastSegment(n.Path)
			if t.After(out[name]) {
				out[name] = t
			}
		}
	}
	return out, nil
}

// JobsChangedAtOf is JobsChangedAt for the jobs named only: a node read
// per job and record, not every job's (a takeover's catch-up looks up
// only the jobs that missed a fire, a few thousand of 100,000).
func (cf Config) JobsChangedAtOf(ctx context.Context, names []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(names))
	for _, name := range names {
		for _, dir := range []string{RegisteredJobPath, ChangedJobPath} {
			n, err := cf.r.kv.Get(ctx, dir+"/"+name)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			t, err := time.Parse(time.RFC3339Nano, string(n.Value))
			if err != nil {
				continue
			}
			if t.After(out[name]) {
				out[name] = t
			}
		}
	}
	return out, nil
}

// JobRegisteredAt is when a job was registered (zero: not recorded, a job
// registered before this was kept, or an unknown job).
func (cf Config) JobRegisteredAt(ctx context.Context, name string) (time.Time, error) {
	n, err := cf.r.kv.Get(ctx, RegisteredJobPath+"/"+name)
	if errors.Is(err, store.ErrNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(n.Value))
	if err != nil {
		return time.Time{}, decodeErr(n.Path, err)
	}
	return t, nil
}

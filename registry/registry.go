package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// Paths of the registry tree.
const (
	AppsPath        = "/config/app"
	JobsPath        = "/config/job"
	ReadyPath       = "/state/ready"
	RunningPath     = "/state/running"
	failoverPath    = "/state/failover"
	disabledAppPath = "/state/disable/app"
	disabledJobPath = "/state/disable/job"
	// frameworkIDPath holds the Mesos framework id every leader subscribes
	// with (SPEC §3); legacyFrameworkIDPath is where earlier versions kept it.
	frameworkIDPath       = "/ha/framework_id"
	legacyFrameworkIDPath = "/state/framework_id"
	// leaderTermPath holds the term that leads now (its sequence, election
	// node and start time), written first by every term: reading its own
	// write back through the registry cache tells a new leader that the
	// cache holds every write of the terms before it.
	leaderTermPath = "/state/leader_term"
)

// Errors the API maps to 404 and 409.
var (
	ErrAppNotFound = errors.New("app not found")
	ErrJobNotFound = errors.New("job not found")
	ErrAppExists   = errors.New("app already exists")
	ErrJobExists   = errors.New("job already exists")
	ErrConflict    = errors.New("conflict")
	// ErrFenced: the write was refused because this instance no longer
	// holds the leadership its fence names (nothing was written).
	ErrFenced = errors.New("not the leader")
)

// maxCASRetries bounds compare-and-set loops.
const maxCASRetries = 100

// Registry reads and writes the registry tree, through one of the two
// views of layout.go: every namespace's (New) or one namespace's (In).
type Registry struct {
	kv store.KV
	// phys is the store itself (the views' own); ns is the namespace of
	// an In view ("" for the scheduler's view of every namespace).
	phys store.KV
	ns   string
	// Fence returns ops prepended to every state write, e.g. a Check of the
	// leader's election node so a deposed leader's writes fail. May be nil.
	Fence func() []store.Op
	// MaxPending caps a job's pending executions (job_state_queue_size);
	// 0 means no cap.
	MaxPending int
	// Damage tracks the stored values listings set aside because they do
	// not decode (damage.go); shared by the views of one registry. May be
	// nil (nothing tracked, nothing logged).
	Damage *Damage
}

// New wraps a store: the scheduler's view of every namespace, each name a
// key (namespace.Key).
func New(kv store.KV) *Registry { return &Registry{kv: allView{kv}, phys: kv} }

// In returns the registry of one namespace, with the same settings and
// fence: its names are its own, and nothing of another namespace is in
// it. The default namespace's is the store's root layout itself.
func (r *Registry) In(ns string) *Registry {
	c := *r
	c.ns = ns
	if ns == "" || ns == namespace.Default {
		c.ns, c.kv = namespace.Default, r.phys
	} else {
		c.kv = nsView{kv: r.phys, ns: ns}
	}
	return &c
}

// Scope is the namespace of an In view ("" for every namespace's).
func (r *Registry) Scope() string { return r.ns }

// Barrier is a registry copy's wait for a write of its own
// (store/cache.KV.Barrier): it commits value at path through commit and
// returns once the copy shows it.
type Barrier func(ctx context.Context, path string, value []byte, commit func(context.Context, ...store.Op) error) error

// BeginTerm writes a new term's record (leaderTermPath: its sequence,
// election node and start time), behind the fence, through barrier: once it
// returns, the registry copy holds every write of the terms before.
func (r *Registry) BeginTerm(ctx context.Context, record []byte, barrier Barrier) error {
	return barrier(ctx, leaderTermPath, record, r.commit)
}

// FencePaths are the paths the fence checks only for existence (the
// leader's election node), for a batch to trust (txn.Trust).
func (r *Registry) FencePaths() []string {
	if r.Fence == nil {
		return nil
	}
	var out []string
	for _, op := range r.Fence() {
		if op.Kind == store.OpCheck && op.Version == store.AnyVersion {
			out = append(out, op.Path)
		}
	}
	return out
}

// commit applies ops behind the fence. A commit that failed on a missing
// node whose fence node is gone failed on the fence: ErrFenced, which
// callers' retry loops (that retry on ErrNotFound) must not retry.
func (r *Registry) commit(ctx context.Context, ops ...store.Op) error {
	if r.Fence == nil {
		return r.kv.Commit(ctx, ops...)
	}
	fence := r.Fence()
	err := r.kv.Commit(ctx, append(fence, ops...)...)
	if err != nil && errors.Is(err, store.ErrNotFound) {
		for _, f := range fence {
			if _, gerr := r.kv.Get(ctx, f.Path); errors.Is(gerr, store.ErrNotFound) {
				return fmt.Errorf("%w: the leadership this write was made under has ended (%s)", ErrFenced, f.Path)
			}
		}
	}
	return err
}

func appPath(name string) string { return AppsPath + "/" + name }
func jobPath(name string) string { return JobsPath + "/" + name }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// AddApp registers a new app.
func (r *Registry) AddApp(ctx context.Context, c app.Config) error {
	err := r.commit(ctx, createJSON(appPath(c.AppName), c))
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: App '%s' already existed.", ErrAppExists, c.AppName)
	}
	return err
}

// UpdateApp replaces an existing app's config.
func (r *Registry) UpdateApp(ctx context.Context, c app.Config) error {
	err := r.commit(ctx, setJSON(appPath(c.AppName), c, store.AnyVersion))
	if errors.Is(err, store.ErrNotFound) {
		return appNotFound(c.AppName)
	}
	return err
}

// SetAppURL points an existing app at a new package URL, keeping its other
// fields even when they change concurrently (compare-and-set on the node's
// version). It returns the app as written; the same URL again writes nothing.
func (r *Registry) SetAppURL(ctx context.Context, name, url string) (app.Config, error) {
	for range maxCASRetries {
		n, err := r.kv.Get(ctx, appPath(name))
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
		err = r.commit(ctx, setJSON(n.Path, c, n.Version))
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

func appNotFound(name string) error {
	return fmt.Errorf("%w: Cannot find app '%s', please publish first.", ErrAppNotFound, name)
}

func jobNotFound(name string) error {
	return fmt.Errorf("%w: Cannot find job '%s', please register first.", ErrJobNotFound, name)
}

// App returns one app.
func (r *Registry) App(ctx context.Context, name string) (app.Config, error) {
	var c app.Config
	n, err := r.kv.Get(ctx, appPath(name))
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
func (r *Registry) Apps(ctx context.Context) ([]app.Config, error) {
	return listJSON[app.Config](ctx, r, AppsPath)
}

// DeleteApp removes an app, its jobs, their state and its disable flag in
// one commit (an app whose stored config does not decode too; its jobs
// are those that decode). Running tasks are killed by the leader, which
// sees the deletions through its watch.
func (r *Registry) DeleteApp(ctx context.Context, name string) ([]string, error) {
	if _, err := r.App(ctx, name); err != nil && !errors.Is(err, ErrDamaged) {
		return nil, err
	}
	all, err := r.Jobs(ctx)
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
	if err := r.commit(ctx, ops...); err != nil {
		return deleted, err
	}
	r.Damage.Forget(r.storePath(appPath(name)))
	return deleted, nil
}

func jobDeleteOps(name string) []store.Op {
	return []store.Op{
		store.Delete(jobPath(name), store.AnyVersion),
		store.Delete(ReadyPath+"/"+name, store.AnyVersion),
		store.Delete(failoverPath+"/"+name, store.AnyVersion),
		store.Delete(disabledJobPath+"/"+name, store.AnyVersion),
		store.Delete(runsPath+"/"+name, store.AnyVersion),
		waitingDeleteOps(name)[0], waitingDeleteOps(name)[1],
		store.Delete(gangPath+"/"+name, store.AnyVersion),
		store.Delete(RegisteredJobPath+"/"+name, store.AnyVersion),
		store.Delete(ChangedJobPath+"/"+name, store.AnyVersion),
	}
}

// RegisteredJobPath holds when each job was registered (RFC 3339), so
// what is kept of a job by name elsewhere (history) counts only from its
// registration: a job deleted and registered again inherits nothing.
const RegisteredJobPath = "/state/registered"

// AddJob registers a new job. Its app must exist and, when the job runs the
// app's package, have an appURL; an HTTP job may name no app. It records
// no registration instant (AddJobAt does).
func (r *Registry) AddJob(ctx context.Context, c jobs.Config) error {
	return r.AddJobAt(ctx, c, time.Time{})
}

// AddJobAt is AddJob recording at as the job's registration instant
// (JobRegisteredAt), in the same commit.
func (r *Registry) AddJobAt(ctx context.Context, c jobs.Config, at time.Time) error {
	return r.withApp(ctx, c, func(check []store.Op) error {
		ops := append(check, createJSON(jobPath(c.JobName), c))
		if !at.IsZero() {
			ops = append(ops, store.Put(RegisteredJobPath+"/"+c.JobName, []byte(at.UTC().Format(time.RFC3339Nano))))
		}
		err := r.commit(ctx, ops...)
		if errors.Is(err, store.ErrExists) {
			return fmt.Errorf("%w: Job '%s' already existed.", ErrJobExists, c.JobName)
		}
		return err
	})
}

// withApp runs commit with the ops checking the job's app, again while the
// app changes under it (the check fails with ErrNotFound or ErrConflict).
func (r *Registry) withApp(ctx context.Context, c jobs.Config, commit func(check []store.Op) error) error {
	for range maxCASRetries {
		check, err := r.appCheck(ctx, c)
		if err != nil {
			return err
		}
		err = commit(check)
		if len(check) == 0 || !(errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict)) {
			return err
		}
	}
	return fmt.Errorf("%w: app '%s' kept changing while job '%s' was written", ErrConflict, c.AppName, c.JobName)
}

// appCheck reads the job's app and returns the op that makes a commit fail
// if the app changes meanwhile (none for a job without an app).
func (r *Registry) appCheck(ctx context.Context, c jobs.Config) ([]store.Op, error) {
	if c.AppName == "" {
		return nil, nil
	}
	n, err := r.kv.Get(ctx, appPath(c.AppName))
	if errors.Is(err, store.ErrNotFound) {
		return nil, appNotFound(c.AppName)
	}
	if err != nil {
		return nil, err
	}
	var a app.Config
	if err := decodeAt(n.Path, n.Value, &a); err != nil {
		return nil, err
	}
	if c.NeedsPackage() && a.AppURL == "" {
		return nil, fmt.Errorf("%w: app '%s' has no appURL yet, and job '%s' runs its package: upload the package "+
			"(PUT /api/app/%s/package) or set the app's appURL first, or give the job jobType SCRIPT or HTTP",
			jobs.ErrInvalid, c.AppName, c.JobName, c.AppName)
	}
	return []store.Op{store.Check(n.Path, n.Version)}, nil
}

// ChangedJobPath holds when each job's config last changed (RFC 3339), so
// that a takeover's catch-up replays only fires of the config in force: a
// change clears what is pending, and the fires before it were the old
// config's (scheduler/missed.go).
const ChangedJobPath = "/state/changed"

// UpdateJob replaces an existing job's config and clears its pending
// queues (the leader kills its running tasks and reschedules it). It
// records no change instant (UpdateJobAt does).
func (r *Registry) UpdateJob(ctx context.Context, c jobs.Config) error {
	return r.UpdateJobAt(ctx, c, time.Time{})
}

// UpdateJobAt is UpdateJob recording at as the job's last change
// (JobsChangedAt), in the same commit.
func (r *Registry) UpdateJobAt(ctx context.Context, c jobs.Config, at time.Time) error {
	if _, err := r.Job(ctx, c.JobName); err != nil {
		return err
	}
	return r.withApp(ctx, c, func(check []store.Op) error {
		ops := append(check,
			setJSON(jobPath(c.JobName), c, store.AnyVersion),
			store.Delete(ReadyPath+"/"+c.JobName, store.AnyVersion),
			store.Delete(failoverPath+"/"+c.JobName, store.AnyVersion))
		if !at.IsZero() {
			ops = append(ops, store.Put(ChangedJobPath+"/"+c.JobName, []byte(at.UTC().Format(time.RFC3339Nano))))
		}
		err := r.commit(ctx, ops...)
		if errors.Is(err, store.ErrNotFound) {
			if _, jerr := r.Job(ctx, c.JobName); jerr != nil {
				return jerr // the job itself went away
			}
		}
		return err
	})
}

// Job returns one job.
func (r *Registry) Job(ctx context.Context, name string) (jobs.Config, error) {
	var c jobs.Config
	n, err := r.kv.Get(ctx, jobPath(name))
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
func (r *Registry) Jobs(ctx context.Context) ([]jobs.Config, error) {
	return listJSON[jobs.Config](ctx, r, JobsPath)
}

// JobNodes lists every job's stored configuration undecoded, sorted by
// path (a job's key is the last element of its path); DecodeJob decodes
// one. A reader that keeps a copy compares them to tell what changed
// without decoding every job (scheduler.Catalog.Sync).
func (r *Registry) JobNodes(ctx context.Context) ([]store.Node, error) {
	return r.kv.List(ctx, JobsPath)
}

// AppNodes lists every app's stored configuration undecoded (JobNodes).
func (r *Registry) AppNodes(ctx context.Context) ([]store.Node, error) {
	return r.kv.List(ctx, AppsPath)
}

// JobNode reads one job's stored configuration undecoded (its path is
// JobsPath/name, as JobNodes lists it); ErrJobNotFound when none.
func (r *Registry) JobNode(ctx context.Context, name string) (store.Node, error) {
	n, err := r.kv.Get(ctx, jobPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return n, jobNotFound(name)
	}
	return n, err
}

// AppNode reads one app's stored configuration undecoded (JobNode).
func (r *Registry) AppNode(ctx context.Context, name string) (store.Node, error) {
	n, err := r.kv.Get(ctx, appPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return n, appNotFound(name)
	}
	return n, err
}

// DecodeJob decodes a node of JobNodes.
func DecodeJob(n store.Node) (jobs.Config, error) {
	var c jobs.Config
	if err := decodeAt(n.Path, n.Value, &c); err != nil {
		return c, err
	}
	return c, nil
}

// DecodeApp decodes a node of AppNodes.
func DecodeApp(n store.Node) (app.Config, error) {
	var c app.Config
	if err := decodeAt(n.Path, n.Value, &c); err != nil {
		return c, err
	}
	return c, nil
}

// JobCount counts registered jobs without decoding them.
func (r *Registry) JobCount(ctx context.Context) (int, error) {
	names, err := r.kv.Children(ctx, JobsPath)
	return len(names), err
}

// JobKeys lists the registered jobs' names (keys, in the scheduler's
// view) without decoding them.
func (r *Registry) JobKeys(ctx context.Context) ([]string, error) {
	return r.kv.Children(ctx, JobsPath)
}

// DeleteJob deregisters a job and clears its queues and disable flag; a
// job whose stored config does not decode is deleted too.
func (r *Registry) DeleteJob(ctx context.Context, name string) error {
	if _, err := r.Job(ctx, name); err != nil && !errors.Is(err, ErrDamaged) {
		return err
	}
	if err := r.commit(ctx, jobDeleteOps(name)...); err != nil {
		return err
	}
	r.Damage.Forget(r.storePath(jobPath(name)))
	return nil
}

// listJSON lists the values under path, setting aside those that do not
// decode.
func listJSON[T any](ctx context.Context, r *Registry, path string) ([]T, error) {
	nodes, err := r.kv.List(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(nodes))
	for _, n := range nodes {
		var v T
		if err := decodeAt(n.Path, n.Value, &v); err != nil {
			r.SetAside(n, err)
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// SetDisabled sets or clears a disable flag. kind is "app" or "job".
// Enabling a job at a known instant records it as the job's last change
// (JobsChangedAt): a takeover's catch-up does not replay the instants it
// spent disabled.
func (r *Registry) SetDisabled(ctx context.Context, kind, name string, disabled bool, now time.Time) error {
	p := "/state/disable/" + kind + "/" + name
	if disabled {
		return r.commit(ctx, store.Put(p, []byte(now.UTC().Format(time.RFC3339))))
	}
	ops := []store.Op{store.Delete(p, store.AnyVersion)}
	if kind == "job" && !now.IsZero() {
		ops = append(ops, store.Put(ChangedJobPath+"/"+name, []byte(now.UTC().Format(time.RFC3339Nano))))
	}
	return r.commit(ctx, ops...)
}

// Disabled lists the names disabled of a kind ("app" or "job").
func (r *Registry) Disabled(ctx context.Context, kind string) (map[string]bool, error) {
	names, err := r.kv.Children(ctx, "/state/disable/"+kind)
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
func (r *Registry) IsDisabled(ctx context.Context, kind, name string) (bool, error) {
	_, err := r.kv.Get(ctx, "/state/disable/"+kind+"/"+name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// FrameworkID returns the persisted Mesos framework id ("" if none).
func (r *Registry) FrameworkID(ctx context.Context) (string, error) {
	n, err := r.kv.Get(ctx, frameworkIDPath)
	if errors.Is(err, store.ErrNotFound) {
		n, err = r.kv.Get(ctx, legacyFrameworkIDPath)
	}
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return string(n.Value), err
}

// SetFrameworkID persists the Mesos framework id.
func (r *Registry) SetFrameworkID(ctx context.Context, id string) error {
	return r.commit(ctx, store.Put(frameworkIDPath, []byte(id)))
}

// with returns a registry with the same settings and fence over kv (e.g.
// a store/txn batch over this registry's store).
func (r *Registry) with(kv store.KV) *Registry {
	c := *r
	c.kv = kv
	return &c
}

// CanRun reads what jobs.CanRun looks at for one job and applies it: the
// one "may this job run now" rule, as the API and the workflow engine ask
// it (the launcher asks its catalog, which holds the same facts).
func (r *Registry) CanRun(ctx context.Context, name string) (jobs.Config, jobs.Runnability, error) {
	j, err := r.Job(ctx, name)
	if errors.Is(err, ErrJobNotFound) {
		return j, jobs.JobMissing, nil
	}
	if err != nil {
		return j, jobs.JobMissing, err
	}
	f := jobs.Facts{Job: &j}
	if f.JobDisabled, err = r.IsDisabled(ctx, "job", name); err != nil {
		return j, jobs.JobMissing, err
	}
	if j.AppName != "" {
		a, err := r.App(ctx, j.AppName)
		switch {
		case err == nil:
			f.App = &a
		case !errors.Is(err, ErrAppNotFound):
			return j, jobs.JobMissing, err
		}
		if f.AppDisabled, err = r.IsDisabled(ctx, "app", j.AppName); err != nil {
			return j, jobs.JobMissing, err
		}
	}
	return j, jobs.CanRun(f), nil
}

// JobsChangedAt returns, per job, the later of its registration and its
// last config change or enable as recorded (AddJobAt, UpdateJobAt,
// SetDisabled); a job with neither recorded is absent, and so is a value
// that does not parse.
func (r *Registry) JobsChangedAt(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, dir := range []string{RegisteredJobPath, ChangedJobPath} {
		nodes, err := r.kv.List(ctx, dir)
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

// JobRegisteredAt is when a job was registered (zero: not recorded, a job
// registered before this was kept, or an unknown job).
func (r *Registry) JobRegisteredAt(ctx context.Context, name string) (time.Time, error) {
	n, err := r.kv.Get(ctx, RegisteredJobPath+"/"+name)
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

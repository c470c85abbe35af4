package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
//
// Registry itself is the core: the fence, the namespace views, commits of
// Changes and batches, watches and the damage tracker. What the registry
// holds is read and written through its facades, one per concern:
// Config (apps, jobs, owners), Flows (workflows and their runs), Work (the
// leader's work: ready, failover, running, runs, waits, gangs, trigger
// keys, log tails), Schedule (calendars, plans, missed fires, backfills,
// deadline alerts), Tenancy (namespaces, secrets, tokens) and Term (the
// term, the framework id, cells).
type Registry struct {
	kv store.KV
	// phys is the store itself (the views' own); ns is the namespace of
	// an In view ("" for the scheduler's view of every namespace).
	phys store.KV
	ns   string
	// fence, maxPending and damage: Options.
	fence      func() []store.Op
	maxPending int
	damage     *Damage
}

// Options are a registry's settings, given to New and kept by its views.
type Options struct {
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
// key (namespace.Key). Its settings are opts (at most one; none: no fence,
// no cap, no damage tracker).
func New(kv store.KV, opts ...Options) *Registry {
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		panic("registry.New: more than one Options")
	}
	return &Registry{kv: allView{kv}, phys: kv, fence: o.Fence, maxPending: o.MaxPending, damage: o.Damage}
}

// MaxPending is the cap on a job's pending executions (Options.MaxPending).
func (r *Registry) MaxPending() int { return r.maxPending }

// Damage is the registry's damage tracker (Options.Damage; may be nil).
func (r *Registry) Damage() *Damage { return r.damage }

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

// FencePaths are the paths the fence checks only for existence (the
// leader's election node), for a batch to trust (txn.Trust).
func (r *Registry) FencePaths() []string {
	if r.fence == nil {
		return nil
	}
	var out []string
	for _, op := range r.fence() {
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
	if r.fence == nil {
		return r.kv.Commit(ctx, ops...)
	}
	fence := r.fence()
	err := r.kv.Commit(ctx, append(fence, ops...)...)
	if ferr := fenceFell(ctx, r.kv, fence, err); ferr != nil {
		return ferr
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

func appNotFound(name string) error {
	return fmt.Errorf("%w: Cannot find app '%s', please publish first.", ErrAppNotFound, name)
}

func jobNotFound(name string) error {
	return fmt.Errorf("%w: Cannot find job '%s', please register first.", ErrJobNotFound, name)
}

func jobDeleteOps(name string) []store.Op {
	return []store.Op{
		store.Delete(jobPath(name), store.AnyVersion),
		store.Delete(ReadyPath+"/"+name, store.AnyVersion),
		bumpGen(name), // kept, as the gate is (ready_gen.go): PruneGates forgets it
		store.Delete(failoverPath+"/"+name, store.AnyVersion),
		store.Delete(disabledJobPath+"/"+name, store.AnyVersion),
		store.Delete(runsPath+"/"+name, store.AnyVersion),
		waitingDeleteOps(name)[0], waitingDeleteOps(name)[1],
		store.Delete(gangPath+"/"+name, store.AnyVersion),
		store.Delete(RegisteredJobPath+"/"+name, store.AnyVersion),
		store.Put(gatePath(name), []byte(gateOff)), // kept, off: a fire in flight for the name fails its check (gate.go)
	}
}

// RegisteredJobPath holds when each job was registered (RFC 3339), so
// what is kept of a job by name elsewhere (history) counts only from its
// registration: a job deleted and registered again inherits nothing.
const RegisteredJobPath = "/state/registered"

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
			r.setAside(n, err)
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// with returns a registry with the same settings and fence over kv (e.g.
// a store/txn batch over this registry's store).
func (r *Registry) with(kv store.KV) *Registry {
	c := *r
	c.kv = kv
	return &c
}

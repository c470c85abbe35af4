package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/api/crd"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/engine/clusters"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/flowengine"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/webhook"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/leader"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
)

// leadership is leader election as this process uses it: election.Solo in
// the embedded mode, an election.Candidate on ZooKeeper, an etcd
// Candidate on etcd (etcd.go).
type leadership interface {
	Run(ctx context.Context) error
	Terms() <-chan *election.Term
	Current() *election.Term
	Leader() (election.Member, bool)
	Members(ctx context.Context) ([]election.Member, error)
	Self() election.Member
}

// electionDir is where the candidates are (SPEC §3).
const electionDir = "/ha/election"

// newLeadership joins the election on the registry's ZooKeeper session, or
// makes this instance the leader of one.
func newLeadership(cfg config.Config, backend store.KV, log *slog.Logger) leadership {
	self := election.Member{ID: instanceID(), URL: cfg.Advertised(), Hostname: cfg.Hostname, Started: time.Now().UTC()}
	if eb, ok := backend.(*etcdBackend); ok {
		return etcdLeadership(cfg, eb, self, log)
	}
	zk, ok := backend.(*zkstore.Store)
	if !ok {
		return election.NewSolo(self, clock.Real{})
	}
	sess := zk.Session()
	cand := election.New(election.Config{Conn: sess.Conn(), Dir: sess.ZPath(electionDir), StoreDir: electionDir,
		ACL: sess.ACL(), Self: self, SessionTimeout: cfg.ZKSessionTimeout, Log: log.With("subsystem", "election")})
	sess.OnState(cand.SessionEvent)
	return cand
}

func instanceID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// notLeaderFence makes a write fail with registry.ErrFenced: it checks a
// node no candidate ever creates.
var notLeaderFence = []store.Op{store.Check(electionDir+"/not-the-leader", store.AnyVersion)}

// apiFence fences the API's writes with the current term: a write served
// while this instance leads commits only while it still does.
func apiFence(lead leadership) func() []store.Op {
	return func() []store.Op {
		if t := lead.Current(); t != nil {
			return t.Fence()
		}
		if _, solo := lead.(*election.Solo); solo {
			return nil
		}
		return notLeaderFence
	}
}

// leaderWork is what this instance runs while it leads: the scheduler's
// loops, the Mesos subscription, the workflow engine and the statistics
// collector, one set per term, each under the term's context.
type leaderWork struct {
	cfg     config.Config
	log     *slog.Logger
	kv      *cache.KV     // the registry cache
	engines *engines      // the cluster engine chosen (engine.go)
	tasks   observe.Tasks // the task observers; the gauges are mx's
	hooks   *webhook.Sender
	coll    *history.Collector // nil without history
	hist    *history.Store     // nil without history
	// maintain is the replicated store's maintenance (registry=etcd:
	// defragmentation, alarms, compaction of an external cluster), a
	// leader loop; nil elsewhere.
	maintain func(context.Context) error
	mx       *metrics.Metrics
	tenancy  api.TenantIsolation // how namespaces' tasks are kept apart (tenancy.go)
	// resolveAppURL rewrites hosted package URLs to this instance's own.
	resolveAppURL func(string) string
	current       atomic.Pointer[scheduler.Scheduler]
	// composed is the term's engine while it runs, when it composes several
	// clusters: the API shows their connections (clusterHealth).
	composed atomic.Pointer[clusters.Engine]
	// flowObserver records workflow runs (metrics, history); workflow.go.
	flowObserver flowengine.Observer
	secrets      *secrets.Keyring // secrets_key_file (nil: none)
	defs         crd.Definitions  // the API's definitions, for the objects' reconciler (crds.go)
	// catalog is the configuration as this instance holds it, kept
	// current between terms (scheduler.Catalog.Follow) and taken over by
	// each term, which then only checks it against the registry copy.
	catalog *scheduler.Catalog
	// damage tracks the registry's entries set aside as damaged (shared
	// with the API's registry, which lists them, and the metric).
	damage *registry.Damage
	gc     gcHeadroom // the collector's headroom by role (memlimit.go)
	// deadlineSinks are told of each missed deadline (deadlines.go).
	deadlineSinks []observe.Deadlines
}

// secretAccess is how a task fetches its job's secrets: from the
// addresses its executor reaches the schedulers at, with its own token.
func (l *leaderWork) secretAccess() func(taskID string) *jobs.SecretAccess {
	if l.secrets == nil {
		return nil
	}
	urls := l.engines.reportURLs
	return func(taskID string) *jobs.SecretAccess {
		return &jobs.SecretAccess{URLs: urls, Token: l.secrets.TaskToken(taskID)}
	}
}

// run serves every term this instance is given until ctx ends (package
// leader: the catch-up barrier, the fenced registry, the term's loops).
func (l *leaderWork) run(ctx context.Context, lead leadership) error {
	ctx, cancel := context.WithCancel(ctx)
	followed := make(chan struct{})
	defer func() { <-followed }() // after cancel (deferred below): nothing reads the store once run returns
	defer cancel()
	creg := registry.New(l.kv, registry.Options{Damage: l.damage})
	l.catalog = scheduler.NewCatalog(creg)
	go func() {
		defer close(followed)
		_ = l.catalog.Follow(ctx, clock.Real{}, l.log.With("subsystem", "catalog"))
	}()
	return leader.Run(ctx, leader.Config{
		Terms: lead,
		Registry: func(fence func() []store.Op) *registry.Registry {
			return registry.New(l.kv, registry.Options{Fence: fence, MaxPending: l.cfg.JobStateQueue, Damage: l.damage})
		},
		CatchUp: l.kv.Barrier,
		Start:   l.start,
		Leading: func(on bool) { l.mx.Leading(on); l.gc.leading(on) },
		Log:     l.log,
	})
}

// start builds a term's loops: the scheduler, its Mesos client, the
// workflow engine and the statistics collector, each under the term's
// context, over the term's fenced registry.
func (l *leaderWork) start(ctx context.Context, term *election.Term, reg *registry.Registry) ([]leader.Loop, error) {
	log := l.log.With("term", term.Seq())
	fwID, err := reg.Term().FrameworkID(ctx)
	if err != nil {
		return nil, fmt.Errorf("read framework id: %w", err)
	}
	client, err := l.engines.newTerm(reg, fwID, log)
	if err != nil {
		return nil, err
	}
	driver := scheduler.Fence(client, engineFence(l.cfg, term))
	var placeOn scheduler.Clusters // one cluster: the round places as it always has
	if names := l.cfg.ClusterNames(); len(names) > 1 {
		placeOn = &clusterStates{names: names, reg: reg, log: log.With("subsystem", "clusters")}
	}
	flows := l.workflowEngine(reg, driver, log)
	sched := scheduler.New(scheduler.Deps{
		Registry: reg, Driver: driver, Inventory: client,
		Clock: clock.Real{}, Log: log.With("subsystem", "scheduler"),
		Tasks: l.tasks, Gauges: l.mx, Notifier: l.hooks, RecentRuns: l.recentRuns(reg), Catalog: l.catalog, Clusters: placeOn,
		Options: scheduler.Options{
			ExecutorCommand: l.engines.exe.command, ExecutorURIs: l.engines.exe.uris, ExecutorEnv: executorEnv(l.cfg), RefuseIdle: l.cfg.OfferRefuse,
			OfferHold: l.cfg.OfferHold, FireLead: l.cfg.FireLead, CronJitter: l.cfg.CronJitter, Term: term.Seq(), FrameworkID: fwID, Reconcile: time.Duration(l.cfg.ReconcileMinutes) * time.Minute,
			Location: l.cfg.Location, ReconcileWait: l.cfg.ReconcileWait, Unreachable: l.cfg.TaskUnreachable,
			ClusterLostAfter: l.cfg.ClusterLostAfter(), ResolveAppURL: l.resolveAppURL,
			MaxRoundTasks: maxRoundTasks(l.cfg), MaxCommitTasks: maxCommitTasks(l.cfg),
			SecretAccess: l.secretAccess(), TaskUser: taskUser(l.cfg),
		},
		Flows: flows,
	})
	flows.Timetable = sched.Timetable()
	log.Info("framework", "framework_id", fwID)
	loops := []leader.Loop{
		{Name: "scheduler", Run: func(ctx context.Context) error {
			l.current.Store(sched)
			defer l.current.Store(nil)
			return sched.Run(ctx)
		}},
		{Name: l.engines.name, Run: func(ctx context.Context) error {
			if ce, ok := client.(*clusters.Engine); ok {
				l.composed.Store(ce)
				// A later term may have stored its own by the time this one ends.
				defer l.composed.CompareAndSwap(ce, nil)
			}
			return client.Run(ctx, sched)
		}},
		{Name: "workflows", Run: flows.Run},
	}
	loops = append(loops, leader.Loop{Name: "namespace usage", Run: nsusage.Sampler{Registry: reg, Series: l.mx.NamespaceSeries(),
		Clock: clock.Real{}, Log: log.With("subsystem", "nsusage")}.Run})
	if l.coll != nil {
		loops = append(loops, leader.Loop{Name: "history statistics", Run: l.coll.Run})
	}
	if l.maintain != nil {
		loops = append(loops, leader.Loop{Name: "etcd maintenance", Run: l.maintain})
	}
	loops = append(loops, l.deadlineLoop(reg, client, log), backfillLoop(reg, sched.Wake, log))
	loops = append(loops, l.crdLoop(reg, log)...)
	loops = append(loops, l.agentIsolationLoop(log.With("subsystem", "agents"))...)
	loops = append(loops, leader.Loop{Name: "damaged entries", Run: func(ctx context.Context) error {
		// Once per term: every damaged entry found and logged, whether or not a
		// loop reads its subtree; the API's list and the metric show them. It
		// waits out the takeover first: a scan decodes every record, and the
		// term's first rounds should not share the CPU with it.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(damageScanDelay):
		}
		if found, err := reg.Scan(ctx); err != nil && ctx.Err() == nil {
			log.Warn("registry: the scan for damaged entries failed", "err", err)
		} else if len(found) > 0 {
			log.Warn("registry: damaged entries are set aside; GET /api/registry/damaged or ejctl registry damaged lists them", "count", len(found))
		}
		return nil
	}})
	return loops, nil
}

// damageScanDelay is how long after a term's start it scans the registry
// for damaged entries (the listings met during the takeover are logged at
// once all the same).
const damageScanDelay = 30 * time.Second

// recentRuns reads a job's recent run durations from history, since the
// job was registered (nil without history).
func (l *leaderWork) recentRuns(reg *registry.Registry) scheduler.RecentRuns {
	if l.hist == nil {
		return nil
	}
	return func(ctx context.Context, job string) ([]time.Duration, error) {
		since, err := reg.Config().JobRegisteredAt(ctx, job)
		if err != nil {
			return nil, err
		}
		return l.hist.RecentDurations(ctx, job, since.Truncate(time.Second), estimate.MaxRuns)
	}
}

// scheduler returns the scheduler of the term in force, or nil.
func (l *leaderWork) scheduler() *scheduler.Scheduler { return l.current.Load() }

// clusterHealth is each cluster's connection as the running term's composed engine sees
// it; nil when no term runs here (a standby) or the engine is a single cluster's.
func (l *leaderWork) clusterHealth() []api.ClusterHealth {
	ce := l.composed.Load()
	if ce == nil {
		return nil
	}
	hs := ce.Health()
	out := make([]api.ClusterHealth, len(hs))
	for i, h := range hs {
		out[i] = api.ClusterHealth(h)
	}
	return out
}

// clusterConnections is each cluster's connection by name, for the metrics; nil as
// clusterHealth is.
func (l *leaderWork) clusterConnections() map[string]bool {
	ce := l.composed.Load()
	if ce == nil {
		return nil
	}
	hs := ce.Health()
	out := make(map[string]bool, len(hs))
	for _, h := range hs {
		out[h.Name] = h.Connected
	}
	return out
}

// apiCluster adapts the leadership to what the API needs to route writes.
type apiCluster struct{ lead leadership }

// Leading: a term in force whose lease holds; on etcd a fenced term
// serves writes while its lease lapsed too (each write compares its key,
// which exists exactly while it leads).
func (c apiCluster) Leading() bool {
	t := c.lead.Current()
	return t != nil && (t.Valid() == nil || t.Fenced())
}

func (c apiCluster) LeaderURL() (string, bool) {
	m, ok := c.lead.Leader()
	if !ok || m.URL == "" {
		return "", false
	}
	return m.URL, true
}

func (c apiCluster) SelfID() string { return c.lead.Self().ID }

// peersOf lists the base URLs of the other scheduler instances (hosted
// packages are pulled from them).
func peersOf(lead leadership) func() []string {
	return func() []string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		members, err := lead.Members(ctx)
		if err != nil {
			return nil
		}
		var out []string
		for _, m := range members {
			if m.ID != lead.Self().ID && m.URL != "" {
				out = append(out, m.URL)
			}
		}
		return out
	}
}

// zkCommitTasks bounds a launch commit on the ZooKeeper registry: it is
// one multi (a running entry and a dequeue per task, ~1 KB) and must stay
// well under ZooKeeper's 1 MB request limit. A larger round is a chain of
// such commits (scheduler.Options.MaxCommitTasks).
const zkCommitTasks = 512

// zkRoundTasks bounds a launch round on the ZooKeeper registry: four
// chained commits. Rounds of one commit (512) paid the round's fixed cost
// (a 100,000-job ready queue read and decided over) per 512 launches;
// rounds of 8,192 (16 commits) launched 14 % more a second in the
// simulated cluster but held the session for so long that the producer's
// fires, queued behind them on it, were 445 ms late at p99, and the
// registry copy's lag (it waits for commits in flight) went from 14 ms to
// 307 ms at p50 (docs/benchmarks.md).
const zkRoundTasks = 2048

// roundTasks bounds a launch round on the embedded registry. Unbounded, a
// round on a large cluster's offers launched tens of thousands of tasks at
// once, whose updates came back as one wave that held the next rounds for
// half a minute; bounded too tightly (1,024), the round's fixed cost (the
// snapshot of a ready queue of 100,000 jobs) dominated and launches fell
// to 270/s.
const roundTasks = 8192

// embeddedCommitTasks bounds a launch commit on the embedded registry by
// its cost: a round is a chain of such commits, which the store applies
// in one transaction while nothing urgent waits, and between two of which
// it lets an urgent commit (the producer's fires) go (store/sqlite's
// chains). A round recorded as one commit of up to roundTasks held the
// store 1.3-2.8 s with the scheduler held to half a core (2-4 s on a
// machine at load 13-21, where the fires queued behind it came 1.5-9.5 s
// late at p99); links of 512 apply in 0.1-0.2 s there, and the fire
// commits waited at most 0.21 s for the store (docs/benchmarks.md). A
// shorter link would cost a commit of its own only when an urgent one
// waits, but cuts more executions into gangs.
const embeddedCommitTasks = 512

// maxRoundTasks and maxCommitTasks: a replicated registry (ZooKeeper or
// etcd, whose transactions are capped at 128 operations and 1.5 MiB and
// are nested or chained past that) takes the ZooKeeper bounds.
func maxRoundTasks(cfg config.Config) int {
	if cfg.Replicated() {
		return zkRoundTasks
	}
	return roundTasks
}

func maxCommitTasks(cfg config.Config) int {
	if cfg.Replicated() {
		return zkCommitTasks
	}
	return embeddedCommitTasks
}

// taskUser gives each namespace's executors the user mesos_task_users names for it, on real
// Mesos only (the embedded agent and Kubernetes isolate namespaces their own way).
func taskUser(cfg config.Config) func(string) string {
	if cfg.MesosURL == "" || cfg.Mesos.TaskUsers == "" {
		return nil
	}
	return cfg.Mesos.TaskUserOf
}

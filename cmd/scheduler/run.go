package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/engine/mesos/detector"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/history/webhook"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/internal/diskreserve"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/sqlite"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
	"github.com/ejcloud/elasticjob/web"
)

// run is the whole scheduler process; it returns when ctx ends or a
// component fails.
func run(ctx context.Context, args []string, getenv func(string) (string, bool), stdout, stderr io.Writer) error {
	cfg, err := config.Load(args, getenv, stdout)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	log.Info("starting", "config", cfg.Redacted())
	setMemoryLimit(cfg, getenv, "/proc/self/cgroup", "/sys/fs/cgroup", log)
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	cfg = withEmbeddedCredential(cfg)
	if cfg.Recover == embedded.RecoverCleanup {
		return cleanup(ctx, cfg, log, stdout)
	}
	reserve, err := openDiskReserve(cfg, log)
	if err != nil {
		return err
	}
	backend, err := openStore(ctx, cfg, log, reserve)
	if err != nil {
		return err
	}
	kv, err := cache.Open(ctx, backend, cache.Options{Roots: cachedRoots, Logger: log.With("subsystem", "registry-cache")})
	if err != nil {
		backend.Close()
		return fmt.Errorf("load the registry: %w", err)
	}
	defer kv.Close()
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr(), err)
	}
	ti, ten := decideTenancy(cfg, embedded.CheckTenancy)
	if err := enforceTenancy(ctx, cfg, ti, registry.New(kv), log); err != nil {
		ln.Close()
		return err
	}
	if ten != nil {
		if err := secureFiles(cfg, log); err != nil {
			ln.Close()
			return err
		}
	}
	masterURL, bind, closeMesos, err := startMesos(ctx, cfg, log, ten, reserve, namespaceCaps(cfg, registry.New(kv)))
	if err != nil {
		ln.Close()
		return err
	}
	defer closeMesos()
	eb, _ := backend.(*etcdBackend)
	return serve(ctx, cfg, log, kv, eb, newLeadership(cfg, backend, log), ln, masterURL, ti, bind)
}

// cachedRoots are the registry subtrees every instance keeps in memory
// (the election's /ha is read from the store itself).
var cachedRoots = []string{"/config", "/state", "/auth", registry.NamespacesPath}

// eb is the registry on etcd (registry=etcd), else nil; bind checks that a
// secret fetch comes from its task's executor (the embedded agent's; nil
// on other engines).
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, kv *cache.KV, eb *etcdBackend, lead leadership, ln net.Listener, masterURL string,
	ti api.TenantIsolation, bind api.ExecutorBinding) error {
	tw, hs, hl, err := openHistory(ctx, cfg, log, eb, func() bool { return lead.Current() != nil })
	if err != nil {
		return err
	}
	if _, solo := lead.(*election.Solo); !solo && tw != nil && tw.Dialect() != "mysql" && hl == nil {
		log.Warn("cluster mode with the embedded history database: each instance keeps only the history of its own terms as leader; set event_trace_rdb_driver=mysql to share one")
	}
	defer func() { closeTrace(tw, hl != nil) }()
	reg := registry.New(kv, registry.Options{ // the API's: fenced with whatever term is in force
		MaxPending: cfg.JobStateQueue,
		Fence:      apiFence(lead),
		Damage:     registry.NewDamage(log.With("subsystem", "registry")),
	})
	mx := metrics.New()
	kv.ObserveLag(mx.CacheLag)
	mx.Leading(false)
	mx.ObserveRegistry(reg, clock.Real{}) // running tasks, queues: read at scrape time, exported by the leader
	mx.ObserveDamaged(reg)
	mx.ObserveClusters(reg, cfg.ClusterNames())
	hooks := webhook.New(log.With("subsystem", "webhook"))
	pkgs, err := openPackages(ctx, cfg, log, reg, ln, peersOf(lead))
	if err != nil {
		return err
	}
	defer pkgs.Close()
	eng, closeEngines, err := buildEngines(cfg, reg, masterURL, log)
	if err != nil {
		return err
	}
	defer closeEngines()
	// The runtime reads GOGC from the process's own environment; a
	// standby until a term begins.
	work := &leaderWork{cfg: cfg, log: log, kv: kv, engines: eng, hooks: hooks, mx: mx, resolveAppURL: launchURL(cfg, pkgs.Resolve), damage: reg.Damage(),
		gc: newGCHeadroom(os.LookupEnv)}
	work.gc.leading(false)
	mx.ObserveConnections(work.clusterConnections)
	if ra, ok := lead.(*raftAside); ok { // its member hands the raft leadership on once the term has launched
		ra.launched = func() bool { s := work.scheduler(); return s != nil && s.Launched() }
	}
	replicaColl := work.observeWith(ctx, reg, tw, hs, hl != nil)
	if hl != nil {
		mx.Register(hl.Collectors()...)
	}
	admin := replicatedStore(eb, mx)
	if admin != nil {
		work.maintain = (&etcdstore.Maintenance{Admin: admin, Compact: eb.member == nil,
			Log: log.With("subsystem", "etcd-maintenance")}).Run
	}
	if cfg.SecretsKeyFile != "" {
		if work.secrets, err = secrets.LoadKeyring(cfg.SecretsKeyFile); err != nil {
			return err
		}
		log.Info("secrets key file read", "current_key", work.secrets.Current())
	}
	work.tenancy = ti
	o, err := apiOptions(ctx, cfg, log, apiParts{reg: reg, kv: kv, lead: lead, work: work, pkgs: pkgs, admin: admin, ti: &ti, tw: tw, hs: hs, bind: bind})
	if err != nil {
		return err
	}
	handler, apiServer := api.NewServer(o)
	work.defs = apiServer
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 8)
	if wh := webhookServer(cfg, eng, kv, apiServer, log); wh != nil {
		go func() { errc <- wh.Run(ctx) }()
	}
	go func() { errc <- hooks.Run(ctx) }()
	go func() { errc <- pkgs.Run(ctx) }() // every instance: replication and GC
	go func() { errc <- lead.Run(ctx) }()
	if hl != nil {
		// Every replica applies the log to its own history for the
		// process's life; the trace writer closes (deferred above) only
		// after the log and the collector stopped.
		histDone := make(chan struct{})
		defer func() { <-histDone }()
		go func() {
			defer close(histDone)
			collDone := make(chan struct{})
			go func() { defer close(collDone); _ = replicaColl.Run(ctx) }()
			_ = hl.Run(ctx)
			<-collDone
		}()
	}
	workDone := make(chan struct{})
	go func() { defer close(workDone); errc <- work.run(ctx, lead) }()
	go func() { errc <- srv.Serve(ln) }()
	log.Info("scheduler ready", "api", "http://"+ln.Addr().String(), "instance", lead.Self().ID, "advertise", lead.Self().URL,
		"mesos", detector.Redact(masterURL), "open_access", cfg.AuthUsername == "")
	return waitAndStop(ctx, cancel, errc, srv, workDone, log)
}

// waitAndStop waits for ctx to end or a part to stop, then stops the API
// server and waits (10 s at most) for the leader's loops: they stop before
// serve's deferred closes take the store, the history and Mesos away from
// a round still under way.
func waitAndStop(ctx context.Context, cancel context.CancelFunc, errc <-chan error, srv *http.Server, workDone <-chan struct{}, log *slog.Logger) error {
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	_ = srv.Shutdown(shutdownCtx)
	select {
	case <-workDone:
	case <-shutdownCtx.Done():
		log.Warn("the leader's loops did not stop within the shutdown's 10 s")
	}
	if errors.Is(runErr, http.ErrServerClosed) || errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	log.Info("stopped", "err", runErr)
	return runErr
}

// apiParts are what serve made that the API is wired from.
type apiParts struct {
	reg   *registry.Registry // this instance's, over its copy of the registry (kv)
	kv    *cache.KV
	lead  leadership
	work  *leaderWork // the term in force, its engines and metrics
	pkgs  *packages.Host
	admin *etcdstore.Admin // the replicated store's cluster (registry=etcd), else nil
	ti    *api.TenantIsolation
	bind  api.ExecutorBinding // the embedded agent's, else nil
	tw    *trace.Writer
	hs    *history.Store
}

// apiOptions wires the API: reads from this instance's registry copy,
// writes routed to the leader (in a cluster), operations on the term in
// force, and what only the engine offers (apiEngine).
func apiOptions(ctx context.Context, cfg config.Config, log *slog.Logger, p apiParts) (api.Options, error) {
	users, err := openUsers(cfg, log)
	if err != nil {
		return api.Options{}, err
	}
	oidcLogin, err := openOIDC(ctx, cfg)
	if err != nil {
		return api.Options{}, err
	}
	work, mx := p.work, p.work.mx
	var historyAPI api.History
	if p.hs != nil {
		historyAPI = p.hs
	}
	o := api.Options{
		Registry: p.reg,
		Auth: api.NewAuth(api.Credentials{AdminUser: cfg.AuthUsername, AdminPassword: cfg.AuthPassword,
			GuestUser: cfg.GuestUsername, GuestPassword: cfg.GuestPassword, TokenTTL: cfg.TokenTTL, Users: users, OIDC: oidcLogin}, clock.Real{}, p.reg.Tenancy()),
		Log:        log.With("subsystem", "api"),
		Limits:     api.Limits{MaxBodyBytes: cfg.MaxBodyBytes},
		Live:       api.Live{Ops: &ops{work: work, lead: p.lead, eng: work.engines.reads}, Engine: work.engines.reads, History: historyAPI},
		Forwarding: apiForwarding(p.lead, p.kv),
		Audit:      auditLog(p.tw, p.hs),
		Apps:       api.AppOptions{Packages: p.pkgs},
		Schedules:  api.ScheduleOptions{Location: cfg.Location, CronJitter: cfg.CronJitter},
		Jobs:       api.JobOptions{TriggerCommitted: mx.TriggerCommitted, Typicals: work.typicals(p.reg)},
		Tenancy: api.TenancyOptions{
			Secrets:         work.secrets,
			TenantIsolation: p.ti,
			ExecutorBinding: p.bind,
			NamespaceSeries: mx.NamespaceSeries(), // the leader samples it (leader.go)
			NamespaceChanged: func() {
				if s := work.scheduler(); s != nil {
					s.CapacityChanged()
				}
			},
			IdleExecutors: func(ctx context.Context, ns string) ([]api.IdleExecutor, bool) {
				return idleExecutors(ctx, work.scheduler(), ns)
			},
		},
		Operate: api.OperateOptions{Pprof: cfg.DebugPprof, Clusters: clusterConfigs(cfg), ClusterHealth: work.clusterHealth},
		Metrics: api.MetricsOptions{Gatherer: mx.Gatherer()},
		Files:   api.Files{Web: web.FS(), Artifacts: work.engines.exe.artifacts},
	}
	if err := metricsAccess(cfg, log, &o); err != nil {
		return api.Options{}, err
	}
	if p.admin != nil {
		o.Operate.Replicated = p.admin
		o.Metrics.Gatherer = prometheus.Gatherers{mx.Gatherer(), etcdstore.MemberGatherer()}
	}
	work.engines.apiEngine(&o) // executors' reports, pod templates, namespaces' quotas (Kubernetes)
	return o, nil
}

// apiForwarding routes writes to the elected leader in a cluster, and
// re-reads what a forwarded write changed into this instance's copy; none
// for a single instance.
func apiForwarding(lead leadership, kv *cache.KV) api.Forwarding {
	if _, solo := lead.(*election.Solo); solo {
		return api.Forwarding{}
	}
	return api.Forwarding{Cluster: apiCluster{lead}, Refresh: func(ctx context.Context, paths []string, all bool) error {
		if all {
			return kv.RefreshAll(ctx)
		}
		return kv.Refresh(ctx, paths...)
	}}
}

// observeWith gives the leader's work its observers: the workflows' and
// the deadlines' sinks, the task observers and the statistics collector.
// With the replicated history every replica writes its own statistics
// (the log counts the task results; the collector takes the running
// snapshots and the hour and day roll-ups), not the leader alone: the
// collector is then returned for every replica to run, not the leader's.
func (w *leaderWork) observeWith(ctx context.Context, reg *registry.Registry, tw *trace.Writer, hs *history.Store, replicated bool) (replicaColl *history.Collector) {
	w.flowObserver, w.hist = workflowObserver(w.mx, tw), hs
	w.deadlineSinks = deadlineSinks(w.mx, tw, w.hooks)
	w.tasks, w.coll = observers(w.mx, tw, hs, reg, w.log, replicated, func(app string) int {
		if a, err := reg.Config().App(ctx, app); err == nil {
			return a.EventTraceSamplingCount
		}
		return 0
	})
	if !replicated {
		return nil
	}
	replicaColl, w.coll = w.coll, nil
	return replicaColl
}

// observers combines the metrics, the event trace and the statistics
// collector into the scheduler's task observers (the loop's gauges are
// the metrics alone). With replicated history the statistics collector
// counts no task results (the log does, on every replica): it is left out.
func observers(mx *metrics.Metrics, tw *trace.Writer, hs *history.Store, reg *registry.Registry, log *slog.Logger,
	replicated bool, sampling func(app string) int) (observe.Tasks, *history.Collector) {
	if tw == nil {
		return mx, nil
	}
	mx.Register(tw.Collectors()...)
	coll := history.NewCollector(hs, history.RegistryOf(reg), log.With("subsystem", "statistics"))
	if replicated {
		return trace.Tee(mx, trace.NewObserver(tw, sampling)), coll
	}
	return trace.Tee(mx, trace.NewObserver(tw, sampling), coll), coll
}

// replicatedStore is the operations of the registry's etcd cluster
// (members, backup, restore; nil on another registry), with its metrics
// registered: the members' health, sizes and leader changes, and the
// store's commit latency.
func replicatedStore(eb *etcdBackend, mx *metrics.Metrics) *etcdstore.Admin {
	if eb == nil {
		return nil
	}
	admin := etcdstore.NewAdmin(eb.Store, electionDir)
	mx.Register(etcdstore.NewClusterCollector(admin))
	mx.Register(eb.Store.Collectors()...)
	return admin
}

// closeTrace closes the event trace, flushing what it spooled for 10 s,
// or for replicatedFlush when its events go to the replicated log: a
// store that lost its quorum (the last members stopping) does not hold
// the stop up, and what it did not take stays in the on-disk spool,
// published at the next start.
func closeTrace(tw *trace.Writer, replicated bool) {
	if tw == nil {
		return
	}
	bound := 10 * time.Second
	if replicated {
		bound = replicatedFlush
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_ = tw.Close(ctx)
}

// replicatedFlush bounds the last flush of a trace writer publishing to
// the replicated history log.
const replicatedFlush = 2 * time.Second

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// openStore opens the registry; an embedded one tries a commit that found
// the disk full once more on the space the disk reserve gives back.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger, reserve *diskreserve.Reserve) (store.KV, error) {
	if cfg.RegistryKind() == config.RegistryEtcd {
		return openEtcd(ctx, cfg, log)
	}
	if cfg.ZKServers != "" {
		kv, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(cfg.ZKServers, ","), Namespace: cfg.ZKNamespace,
			Digest: cfg.ZKDigest, SessionTimeout: cfg.ZKSessionTimeout, Logger: log.With("subsystem", "zookeeper")})
		if err != nil {
			return nil, fmt.Errorf("open ZooKeeper registry %s: %w", cfg.ZKServers, err)
		}
		return kv, nil
	}
	opts := sqlite.Options{Sync: sqlite.SyncFull}
	if reserve != nil {
		opts.OnFull = reserve.Release
	}
	if cfg.RegistrySync == "normal" {
		opts.Sync = sqlite.SyncNormal
	}
	kv, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "registry.db"), opts)
	if err != nil {
		return nil, fmt.Errorf("open embedded registry: %w", err)
	}
	return kv, nil
}

// startMesos returns the master URL: the configured one, or that of an
// embedded single-node master+agent started here, with its agent's check
// that a secret fetch comes from the executor running its task (nil
// without an embedded agent: the engine cannot tell).
func startMesos(ctx context.Context, cfg config.Config, log *slog.Logger, ten *embedded.Tenancy, reserve *diskreserve.Reserve,
	caps func(string) embedded.NamespaceCaps) (string, api.ExecutorBinding, func(), error) {
	if list := cfg.ClusterList(); len(list) > 1 && !slices.ContainsFunc(list, func(c config.Cluster) bool { return c.Engine == config.EngineEmbedded }) {
		return "", nil, func() {}, nil // several clusters, none of them the embedded engine
	}
	if cfg.MesosURL != "" {
		return strings.TrimRight(cfg.MesosURL, "/"), nil, func() {}, nil
	}
	if cfg.KubeEnabled() {
		return "", nil, func() {}, nil
	}
	ecfg := embeddedConfig(cfg, log)
	ecfg.Tenancy, ecfg.NamespaceCaps = ten, caps
	cl, err := embedded.New(ecfg)
	if err != nil {
		return "", nil, nil, fmt.Errorf("embedded mesos: %w", err)
	}
	if err := cl.Start(ctx); err != nil {
		return "", nil, nil, fmt.Errorf("embedded mesos: %w", err)
	}
	stopReserve := func() {}
	if reserve != nil {
		// The disk was found full: the watcher's pass stops the largest
		// sandbox now, not at its next tick.
		reserve.Released = func() { go cl.WatchDisk() }
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			reserve.Keep(stop, diskReserveCheck, int64(cfg.DiskHeadroomMB)<<20, diskReserveFloor, func() (int64, error) {
				return diskreserve.Free(cfg.DataDir)
			})
		}()
		stopReserve = func() { close(stop); <-done }
	}
	return cl.URL(), cl.CheckSecretFetch, func() { stopReserve(); _ = cl.Close() }, nil
}

// namespaceCaps gives the embedded agent each namespace's caps: its
// record's, else the settings (namespace_pids_max, namespace_mem_mb,
// namespace_disk_mb). The record is read from this instance's copy of the
// registry, in memory.
func namespaceCaps(cfg config.Config, reg *registry.Registry) func(string) embedded.NamespaceCaps {
	return func(ns string) embedded.NamespaceCaps {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var own *namespace.HostCaps
		if rec, err := reg.Tenancy().Namespace(ctx, ns); err == nil {
			own = rec.Caps
		}
		p, m, d := own.Or(int64(cfg.NamespacePidsMax), int64(cfg.NamespaceMemMB), int64(cfg.NamespaceDiskMB))
		return embedded.NamespaceCaps{PidsMax: p, MemMB: m, DiskMB: d}
	}
}

// diskReserveCheck is how often the disk reserve looks at the data
// directory's free space; below diskReserveFloor it gives its space back
// without waiting for a commit to find the disk full.
const (
	diskReserveCheck = time.Second
	diskReserveFloor = 1 << 20
)

// openDiskReserve makes the data directory's disk reserve where the
// registry shares its file system with the embedded agent's sandboxes
// (disk_reserve_mb; nil where it does not, or 0).
func openDiskReserve(cfg config.Config, log *slog.Logger) (*diskreserve.Reserve, error) {
	if cfg.DiskReserveMB == 0 || cfg.MesosURL != "" || cfg.KubeEnabled() || cfg.RegistryKind() == config.RegistryEtcd || cfg.ZKServers != "" {
		return nil, nil
	}
	return diskreserve.Open(filepath.Join(cfg.DataDir, diskreserve.FileName), int64(cfg.DiskReserveMB)<<20, log.With("subsystem", "disk-reserve"))
}

// embeddedConfig is the embedded master+agent's configuration: its work
// directory is data_dir/mesos, where it checkpoints what it runs, so that
// a restart of the scheduler takes its running executors and tasks over.
func embeddedConfig(cfg config.Config, log *slog.Logger) embedded.Config {
	return embedded.Config{WorkDir: filepath.Join(cfg.DataDir, "mesos"), CPUs: cfg.EmbeddedCPUs,
		MemMB: cfg.EmbeddedMemMB, Logger: log.With("subsystem", "embedded-mesos"),
		Isolation: cfg.Isolation, CgroupsRoot: cfg.CgroupsRoot, PidsMax: pidsMax(cfg.PidsMax), CPUQuota: cfg.CPUQuota,
		GCDelay: cfg.GCDelay, GCDiskHeadroom: cfg.GCDiskHeadroom,
		SandboxDiskMB: int64(cfg.SandboxDiskMB), DiskHeadroomMB: int64(cfg.DiskHeadroomMB),
		NamespacePidsMax: int64(cfg.NamespacePidsMax), NamespaceMemMB: int64(cfg.NamespaceMemMB),
		NamespaceDiskMB: int64(cfg.NamespaceDiskMB),
		RecoveryTimeout: cfg.RecoveryTimeout, Recover: cfg.Recover, Process: "scheduler",
		Principal: cfg.Mesos.Principal, Secret: cfg.Mesos.Secret}
}

// embeddedPrincipal is the framework principal on the embedded master when
// mesos_principal is not set.
const embeddedPrincipal = "elasticjob"

// withEmbeddedCredential gives the embedded master a framework credential
// only this process holds: unless mesos_secret is set, a random secret made
// at each start and kept in memory (the master is in this process and
// starts afresh with it). Its scheduler, operator and read APIs refuse
// whatever does not present it, such as a task that knows the framework id
// from its environment.
func withEmbeddedCredential(cfg config.Config) config.Config {
	if cfg.MesosURL != "" || cfg.KubeEnabled() || cfg.Mesos.Secret != "" {
		return cfg
	}
	if cfg.Mesos.Principal == "" {
		cfg.Mesos.Principal = embeddedPrincipal
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	cfg.Mesos.Secret = hex.EncodeToString(b)
	return cfg
}

// executorCommand finds the executor binary: the setting, else "executor"
// beside this binary, else on PATH.
func executorCommand(cfg config.Config) (string, error) {
	if cfg.ExecutorPath != "" {
		return cfg.ExecutorPath, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "executor")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("elasticjob-executor"); err == nil {
		return p, nil
	}
	return "", errors.New("executor binary not found: build it (make build puts bin/executor beside bin/scheduler) or set executor_path")
}

func executorEnv(cfg config.Config) map[string]string {
	env := map[string]string{
		"ELASTICJOB_EXECUTOR_IDLE_TIMEOUT": cfg.ExecutorIdle.String(),
		"ELASTICJOB_CACHE_MAX_SIZE":        strconv.FormatInt(cfg.ExecutorCacheMax, 10),
		"ELASTICJOB_GC_DELAY":              cfg.GCDelay.String(),
		"ELASTICJOB_GC_DISK_HEADROOM":      strconv.FormatFloat(cfg.GCDiskHeadroom, 'f', -1, 64),
	}
	dir := cfg.ExecutorCacheDir
	if dir == "" && cfg.MesosURL == "" {
		if abs, err := filepath.Abs(filepath.Join(cfg.DataDir, "cache")); err == nil {
			dir = abs
		}
	}
	if dir != "" {
		env["ELASTICJOB_CACHE_DIR"] = dir
	}
	if cfg.ExecutorJavaJar != "" {
		env["ELASTICJOB_JAVA_JAR"] = cfg.ExecutorJavaJar
	}
	if cfg.ExecutorJavaOpts != "" {
		env["ELASTICJOB_JAVA_OPTS"] = cfg.ExecutorJavaOpts
	}
	return env
}

// pidsMax maps the isolation_pids_max setting (0: no limit) to the
// embedded agent's (0: default, negative: no limit).
func pidsMax(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// openUsers reads the users file (auth_users_file), if one is set: a file
// that cannot be read or parsed stops the start; later changes are read
// as they come (identity.UsersFile).
func openUsers(cfg config.Config, log *slog.Logger) (*identity.UsersFile, error) {
	if cfg.UsersFile == "" {
		return nil, nil
	}
	u, err := identity.OpenUsersFile(cfg.UsersFile, log.With("subsystem", "users"), cfg.AuthUsername, cfg.GuestUsername)
	if err != nil {
		return nil, fmt.Errorf("auth_users_file: %w", err)
	}
	return u, nil
}

// openOIDC asks the OIDC provider's discovery (oidc_issuer), if one is
// set: a provider that does not answer, or a client secret file that
// cannot be read, stops the start with what to fix.
func openOIDC(ctx context.Context, cfg config.Config) (*api.OIDC, error) {
	o := cfg.OIDC
	if !o.Enabled() {
		return nil, nil
	}
	var secret string
	if o.ClientSecretFile != "" {
		b, err := os.ReadFile(o.ClientSecretFile)
		if err != nil {
			return nil, fmt.Errorf("oidc_client_secret_file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
		if secret == "" {
			return nil, fmt.Errorf("oidc_client_secret_file %s: the file is empty", o.ClientSecretFile)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return api.NewOIDC(dctx, api.OIDCConfig{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: secret,
		RedirectURL: cfg.OIDCRedirect(), Scopes: o.ScopeList(), GroupsClaim: o.GroupsClaim, UsernameClaim: o.UsernameClaim})
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/mesos/agents"
	"github.com/ejcloud/elasticjob/mesos/embedded"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/scheduler/history"
	"github.com/ejcloud/elasticjob/scheduler/trace"
	"github.com/ejcloud/elasticjob/scheduler/webhook"
	"github.com/ejcloud/elasticjob/store"
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
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	kv, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer kv.Close()
	reg := registry.New(kv)
	reg.MaxPending = cfg.JobStateQueue
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr(), err)
	}
	masterURL, closeMesos, err := startMesos(ctx, cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer closeMesos()
	return serve(ctx, cfg, log, reg, ln, masterURL)
}

func serve(ctx context.Context, cfg config.Config, log *slog.Logger, reg *registry.Registry, ln net.Listener, masterURL string) error {
	fwID, err := reg.FrameworkID(ctx)
	if err != nil {
		return fmt.Errorf("read framework id: %w", err)
	}
	execCmd, err := executorCommand(cfg)
	if err != nil {
		return err
	}
	tw, hs, err := openHistory(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeTrace(tw)
	client := mesos.New(mesos.Config{URL: masterURL, FrameworkID: fwID, User: cfg.User, Role: cfg.MesosRole,
		Hostname: cfg.Hostname, Logger: log.With("subsystem", "mesos")})
	mx := metrics.New()
	hooks := webhook.New(log.With("subsystem", "webhook"))
	var sched *scheduler.Scheduler
	observer, coll := observers(mx, tw, hs, reg, log, func(app string) int {
		a, _ := sched.Catalog().App(app)
		return a.EventTraceSamplingCount
	})
	sched = scheduler.New(scheduler.Deps{
		Registry: reg, Driver: client, Clock: clock.Real{}, Log: log.With("subsystem", "scheduler"), Observer: observer, Notifier: hooks,
		Options: scheduler.Options{
			ExecutorCommand: execCmd, ExecutorEnv: executorEnv(cfg), RefuseIdle: cfg.OfferRefuse, OfferHold: cfg.OfferHold, FireLead: cfg.FireLead,
			Reconcile: time.Duration(cfg.ReconcileMinutes) * time.Minute, Location: cfg.Location,
		},
	})
	var historyAPI api.History
	if hs != nil {
		historyAPI = hs
	}
	handler := api.New(api.Options{
		History:  historyAPI,
		Registry: reg, Log: log.With("subsystem", "api"), MaxBodyBytes: cfg.MaxBodyBytes, Web: web.FS(), Metrics: mx.Handler(),
		Auth: api.NewAuth(api.Credentials{AdminUser: cfg.AuthUsername, AdminPassword: cfg.AuthPassword,
			GuestUser: cfg.GuestUsername, GuestPassword: cfg.GuestPassword, TokenTTL: cfg.TokenTTL}, clock.Real{}),
		Ops: &ops{sched: sched, agents: agents.New(masterURL), mesosURL: masterURL, embedded: cfg.MesosURL == "", hostname: cfg.Hostname},
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 5)
	go func() { errc <- hooks.Run(ctx) }()
	if coll != nil {
		go func() { errc <- coll.Run(ctx) }() // leader-only: the embedded scheduler is always the leader
	}
	go func() { errc <- sched.Run(ctx) }()
	go func() { errc <- client.Run(ctx, sched) }()
	go func() { errc <- srv.Serve(ln) }()
	log.Info("scheduler ready", "api", "http://"+ln.Addr().String(), "mesos", masterURL, "open_access", cfg.AuthUsername == "")
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	_ = srv.Shutdown(shutdownCtx)
	if errors.Is(runErr, http.ErrServerClosed) || errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	log.Info("stopped", "err", runErr)
	return runErr
}

// observers combines the metrics, the event trace and the statistics
// collector into the scheduler's one Observer.
func observers(mx *metrics.Metrics, tw *trace.Writer, hs *history.Store, reg *registry.Registry, log *slog.Logger,
	sampling func(app string) int) (scheduler.Observer, *history.Collector) {
	if tw == nil {
		return mx, nil
	}
	mx.Register(tw.Collectors()...)
	coll := history.NewCollector(hs, reg, log.With("subsystem", "statistics"))
	return trace.Tee(mx, trace.NewObserver(tw, sampling), coll), coll
}

func closeTrace(tw *trace.Writer) {
	if tw == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = tw.Close(ctx)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (store.KV, error) {
	if cfg.ZKServers != "" {
		kv, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(cfg.ZKServers, ","), Namespace: cfg.ZKNamespace,
			Digest: cfg.ZKDigest, Logger: log.With("subsystem", "zookeeper")})
		if err != nil {
			return nil, fmt.Errorf("open ZooKeeper registry %s: %w", cfg.ZKServers, err)
		}
		return kv, nil
	}
	opts := sqlite.Options{Sync: sqlite.SyncFull}
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
// embedded single-node master+agent started here.
func startMesos(ctx context.Context, cfg config.Config, log *slog.Logger) (string, func(), error) {
	if cfg.MesosURL != "" {
		return strings.TrimRight(cfg.MesosURL, "/"), func() {}, nil
	}
	cl, err := embedded.New(embedded.Config{WorkDir: filepath.Join(cfg.DataDir, "mesos"), CPUs: cfg.EmbeddedCPUs,
		MemMB: cfg.EmbeddedMemMB, Logger: log.With("subsystem", "embedded-mesos"),
		Isolation: cfg.Isolation, CgroupsRoot: cfg.CgroupsRoot, PidsMax: pidsMax(cfg.PidsMax), CPUQuota: cfg.CPUQuota,
		GCDelay: cfg.GCDelay, GCDiskHeadroom: cfg.GCDiskHeadroom})
	if err != nil {
		return "", nil, fmt.Errorf("embedded mesos: %w", err)
	}
	if err := cl.Start(ctx); err != nil {
		return "", nil, fmt.Errorf("embedded mesos: %w", err)
	}
	return cl.URL(), func() { _ = cl.Close() }, nil
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

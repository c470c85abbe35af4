package embedded

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/engine/mesos/inproc"
)

// Cluster is an embedded single-node Mesos master and agent: the master's
// state (master.go) and the agent's (host.go), guarded by one mutex, and
// the HTTP server both serve on, its endpoints grouped by API
// (operatorAPI, schedulerAPI, executorAPI).
type Cluster struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex
	master
	host
	rt agentRuntime // runs the executors: hostRuntime, or the simulator with Config.Sim

	// The HTTP endpoints, by API (operator.go, sched_api.go, exec_api.go).
	operatorAPI
	schedulerAPI
	executorAPI
	execReads execReads // executor calls whose bodies are being read (exec_api.go)

	bg     sync.WaitGroup // the GC and alive loops
	stopGC chan struct{}
	unlock func() // releases the work directory

	srv      *http.Server
	ln       net.Listener
	hostPort string
	serveErr chan error
	// unregister ends serving this process's clients in process (inproc).
	unregister func()
}

// New validates cfg and builds a Cluster; Start makes it serve.
func New(cfg Config) (*Cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	masterID := newUUID()
	agents, err := buildAgents(cfg, masterID)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:    cfg,
		log:    cfg.Logger.With("subsystem", "mesos-local"),
		stopGC: make(chan struct{}),
	}
	c.master = newMaster(masterID, agents, cfg, c.log, &c.mu)
	c.master.init()
	c.operatorAPI, c.schedulerAPI, c.executorAPI = operatorAPI{c}, schedulerAPI{c}, executorAPI{c}
	c.host = newHost(cfg, c.log, &c.mu)
	c.resized = func(e *executor) { c.iso.resize(e) }
	if cfg.Sim != nil {
		c.rt = newSimulator(c, *cfg.Sim)
	} else {
		c.rt = hostRuntime{c}
		if c.ck, err = newCheckpoint(cfg.WorkDir, agents[0].id, c.log.With("subsystem", "checkpoint")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// buildAgents makes the real agent (its id kept in the work directory) or,
// with Config.Sim, the simulated ones.
func buildAgents(cfg Config, masterID string) ([]*agent, error) {
	if cfg.Sim != nil {
		return simAgents(cfg, masterID)
	}
	total, err := agentResources(cfg)
	if err != nil {
		return nil, err
	}
	id, err := loadAgentID(cfg.WorkDir, masterID+"-S0")
	if err != nil {
		return nil, err
	}
	return []*agent{newAgent(0, id, cfg.Hostname, total, false)}, nil
}

// Start listens on Config.Addr and returns once the server is serving.
// It first takes the work directory over from an earlier run: executors
// of checkpointing frameworks that still run are recovered (or, with
// Recover = cleanup, shut down), the rest of what that run left is killed.
func (c *Cluster) Start(ctx context.Context) error {
	unlock, err := lockWorkDir(c.cfg.WorkDir)
	if err != nil {
		return err
	}
	started := false
	defer func() {
		if !started {
			unlock()
		}
	}()
	rec := c.loadRecovery()
	orphans := c.rt.takeOver(rec)
	ten, err := startTenancy(c.cfg)
	if err != nil {
		return err
	}
	iso, err := startIsolation(c.cfg, c.AgentID(), rec.alive, c.log.With("subsystem", "isolation"))
	if err != nil {
		ten.close()
		return err
	}
	ln, err := c.listen(ctx)
	if err != nil {
		iso.close(0)
		ten.close()
		return err
	}
	c.mu.Lock()
	c.iso, c.ten = iso, ten
	if ten != nil {
		c.cacheRoot = ten.cfg.CacheDir
	}
	c.rt.rebuild(rec, orphans)
	c.cleanedUp()
	c.mu.Unlock()
	c.bg.Add(1)
	go c.gcLoop(c.stopGC)
	c.rt.start()
	mux := http.NewServeMux()
	auth := c.authenticated // the framework credential (auth.go); executors bring their own token
	mux.HandleFunc("/api/v1/scheduler", auth(c.handleScheduler))
	mux.HandleFunc("/api/v1/executor", c.handleExecutor)
	mux.HandleFunc("/api/v1", auth(c.handleOperator))
	mux.HandleFunc("/state", auth(c.handleState))
	mux.HandleFunc("/state.json", auth(c.handleState))
	mux.HandleFunc("/slave(1)/state", auth(c.handleState))
	mux.HandleFunc("/slaves", auth(c.handleSlaves))
	mux.HandleFunc("/master/slaves", auth(c.handleSlaves))
	mux.HandleFunc("/metrics/snapshot", auth(c.handleMetrics))
	mux.HandleFunc("/files/read", auth(c.handleFilesRead))
	mux.HandleFunc("/files/read.json", auth(c.handleFilesRead))
	mux.HandleFunc("/files/browse", auth(c.handleFilesBrowse))
	mux.HandleFunc("/files/browse.json", auth(c.handleFilesBrowse))
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	c.mu.Lock()
	c.ln = ln
	c.listenPort = tcpPort(ln)
	c.hostPort = ln.Addr().String()
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	c.serveErr = make(chan error, 1)
	srv := c.srv
	// A scheduler in this process calls the master without a socket
	// (engine/mesos's client); executors and other clients use the port.
	c.unregister = inproc.Register(c.hostPort, mux)
	c.mu.Unlock()
	go func() { c.serveErr <- srv.Serve(ln) }()
	started, c.unlock = true, unlock
	c.rt.logStart(c.URL())
	return nil
}

// URL is the master URL, e.g. "http://127.0.0.1:5050".
func (c *Cluster) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return "http://" + c.hostPort
}

// AgentID is the id of the real agent (of the first simulated agent in
// simulation mode).
func (c *Cluster) AgentID() string { return c.agents[0].id }

// closeTaskRecords closes the files the tasks' checkpointed records are
// appended through.
func (c *Cluster) closeTaskRecords() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fw := range c.frameworks {
		for _, t := range fw.tasks {
			t.closeRecords()
		}
	}
}

// Close stops the agent. Executors of frameworks that checkpoint are left
// running, their state checkpointed, for the next start on this work
// directory to recover (a Mesos agent's restart); every other executor is
// shut down (SHUTDOWN, then SIGTERM and SIGKILL to its process group) and
// waited for. Streams are closed and the server stopped.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	if c.unregister != nil {
		c.unregister() // from now on this process's clients, too, call through the port
	}
	defer c.closeTaskRecords() // once the server is stopped: no record comes after
	var waits []<-chan struct{}
	left := 0
	for _, fw := range c.frameworks {
		for _, e := range fw.executors {
			if c.leaveRunning(e) {
				c.detach(e)
				left++
				continue
			}
			c.shutdownExecutor(e)
			if done := c.rt.exitOf(e); done != nil {
				waits = append(waits, done)
			}
		}
		for _, t := range fw.tasks {
			t.stopRetry()
		}
		c.stopFramework(fw)
	}
	srv := c.srv
	c.mu.Unlock()
	c.rt.stop()
	for _, w := range waits {
		<-w
	}
	c.iso.close(left)
	close(c.stopGC)
	c.bg.Wait()
	c.ten.close()
	if left > 0 {
		c.log.Info("agent stopped; its executors keep running for its next start to take over", "executors", left,
			"recovery_timeout", c.cfg.RecoveryTimeout)
	}
	if c.unlock != nil {
		defer c.unlock()
	}
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	if serr := <-c.serveErr; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// aliveLoop touches the alive mark every second until stop is closed: a
// run killed outright leaves when it was last alive, the end of the
// executors that died with it.
func (c *Cluster) aliveLoop(stop <-chan struct{}) {
	defer c.bg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		c.ck.touchAlive()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// listen listens on Config.Addr; when that names no port (":0") and an
// earlier run of this work directory recorded its address, that address
// first, where its executors look for it.
func (c *Cluster) listen(ctx context.Context) (net.Listener, error) {
	var lc net.ListenConfig
	addr := c.cfg.Addr
	if prev := c.rt.previousAddress(); prev != "" && sameHostAnyPort(addr, prev) {
		ln, err := lc.Listen(ctx, "tcp", prev)
		if err == nil {
			return ln, nil
		}
		c.log.Warn("the address of the earlier run is taken: its executors cannot re-register and will be killed",
			"address", prev, "err", err)
	}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil && c.cfg.Recover == RecoverCleanup {
		// Cleaning up needs no address: executors that cannot report are
		// killed after their grace period.
		c.log.Warn("address taken: executors cannot report their tasks' ends before they are stopped", "address", addr, "err", err)
		if host, _, serr := net.SplitHostPort(addr); serr == nil {
			ln, err = lc.Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("local: listen %s: %w", addr, err)
	}
	c.rt.listening(ln.Addr().String())
	return ln, nil
}

func newUUID() string {
	b := uuidBytes()
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func uuidBytes() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b
}

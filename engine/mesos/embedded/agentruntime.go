package embedded

// agentRuntime runs the executors of the cluster's agents; the cluster reaches
// the agent side only through it. Two implement it: hostRuntime, the real
// agent (processes on this machine, checkpointed, taken over by the next
// start), and the simulator (Config.Sim: in-process executors of many
// simulated agents, for tests and benchmarks, sim*.go), so that neither
// carries the other's branches. Like the rest of the cluster, both are
// guarded by Cluster.mu where a method says so.
type agentRuntime interface {
	// takeOver takes the work directory over from an earlier run, before
	// the server listens: it kills the processes that run left that rec
	// does not recover, and returns the sandboxes it killed them in.
	takeOver(rec recovery) (orphans map[string]int)
	// previousAddress is where an earlier run of the work directory
	// listened and its executors look for it; "" when none.
	previousAddress() string
	// listening is told the address the cluster listens on.
	listening(addr string)
	// rebuild rebuilds what the earlier run left (c.mu held).
	rebuild(rec recovery, orphans map[string]int)
	// start runs once the cluster is rebuilt, before it serves.
	start()
	// logStart logs that the cluster serves at url.
	logStart(url string)
	// launch starts a new executor, registered and charged (c.mu held).
	launch(e *executor, token string)
	// exitOf is closed when a shut-down executor is gone; nil when there
	// is nothing to wait for.
	exitOf(e *executor) <-chan struct{}
	// stop ends what runs the executors (c.mu not held).
	stop()
}

// hostRuntime is the real agent: executors are processes on this machine
// in their sandboxes (process.go, executor.go), checkpointed when their
// framework asks (checkpoint.go) and recovered by the next start on the
// work directory (recover.go). Its state is the cluster's host.
type hostRuntime struct{ c *Cluster }

func (h hostRuntime) takeOver(rec recovery) map[string]int {
	c := h.c
	orphans := reapAll(c.sandboxRoot(), true, func(sandbox string) bool { return rec.aliveDirs[sandbox] })
	if n := total(orphans); n > 0 {
		c.log.Warn("killed processes left by executors of an earlier run", "processes", n)
	}
	return orphans
}

func (h hostRuntime) previousAddress() string { return readAddress(h.c.cfg.WorkDir) }

func (h hostRuntime) listening(addr string) {
	if h.c.cfg.Recover == RecoverReconnect {
		recordAddress(h.c.cfg.WorkDir, addr, h.c.log)
	}
}

func (h hostRuntime) rebuild(rec recovery, orphans map[string]int) {
	c := h.c
	c.recover(rec, orphans)
	c.archived = c.recoverArchive(c.AgentID(), c.frameworks)
	c.watchRecovered()
}

// start touches the alive mark every second from now on (aliveLoop) and
// watches the sandboxes' disk (diskLoop).
func (h hostRuntime) start() {
	h.c.bg.Add(2)
	go h.c.aliveLoop(h.c.stopGC)
	go h.c.diskLoop(h.c.stopGC)
}

func (h hostRuntime) logStart(url string) {
	c := h.c
	c.log.Info("embedded mesos started", "url", url, "agent_id", c.AgentID(),
		"resources", c.agents[0].total.String(), "recovered_executors", c.Recovered(), "recover", c.cfg.Recover)
}

// launch checkpoints the executor when its framework asks, puts it in its
// container and starts its process in the background.
func (h hostRuntime) launch(e *executor, token string) {
	c := h.c
	fw := e.fw
	if c.ck != nil && fw.info.GetCheckpoint() {
		e.meta, e.ck = c.ck.runDir(fw.id, e.id, e.containerID), c.ck
		c.ck.framework(fw)
		c.ck.executor(e)
	}
	// Its uid now: its tasks' groups are made, theirs, before it starts
	// (an error here is confine's to report).
	_ = c.ten.assign(e)
	c.iso.prepare(e)
	// Last: it wins over a CommandInfo variable of that name.
	go c.runExecutor(e, append(c.executorEnv(e), ExecutorTokenEnv+"="+token))
	c.log.Info("launching executor", "framework_id", fw.id, "executor_id", e.id, "sandbox", e.dir)
}

func (h hostRuntime) exitOf(e *executor) <-chan struct{} { return e.done }

func (h hostRuntime) stop() {}

// The simulator's side of agentRuntime: no work directory to take over, no
// address to keep, no process to wait for.

func (s *simulator) takeOver(recovery) map[string]int { return nil }
func (s *simulator) previousAddress() string          { return "" }
func (s *simulator) listening(string)                 {}
func (s *simulator) rebuild(recovery, map[string]int) {}
func (s *simulator) exitOf(*executor) <-chan struct{} { return nil }

func (s *simulator) logStart(url string) {
	c := s.c
	c.log.Warn("SIMULATED CLUSTER (test and benchmark mode): no task runs a process", "url", url,
		"agents", len(c.agents), "agent_resources", c.agents[0].total.String(), "task_duration", s.cfg.durations())
}

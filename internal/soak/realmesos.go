package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// RealMesos is the production shape on a real Apache Mesos 1.11: the
// etcd shape's three schedulers (an etcd member each, peer proxies, a
// proxy of its own in front of the master) against a real mesos-master
// and one or more real mesos-agents on 127.0.0.1, whose executors (the
// project's, fetched from the leading scheduler) run each shard as a real
// process: the soak app's script, which appends its start and end to the
// run log itself (recordScript). Its own faults besides the etcd shape's:
// an agent killed and restarted on its work directory (it recovers its
// executors: checkpointing), an agent lost (killed with everything it ran,
// back as a new agent: its tasks go UNREACHABLE, then LOST), the master
// killed and restarted (its registry in the replicated log: the framework
// subscribes again, the agents register again, the leader reconciles), a
// standby paused.
type RealMesos struct {
	Etcd
	Home   string // the Mesos build (bin/mesos-master, bin/mesos-agent, libexec/mesos)
	Agents int    // how many agents (1 when 0)
	// Resources are each agent's (default cpus:2;mem:4096;disk:10240 and
	// a port range of its own).
	Resources string

	master *proc
	agents []*mesosAgent
}

// mesosAgent is one real agent: its process, restarted on the same work
// directory (recovery) or, once lost, on a new one (a new agent id).
type mesosAgent struct {
	p     *proc
	name  string
	port  int
	lives int // work directories used so far (agent-lost starts a new one)
	home  string
	dir   string // the soak's cluster directory
	res   string
	mport int // the master's port
}

var _ Shape = (*RealMesos)(nil)

// ShapeRealMesos is the real-Mesos shape's name (-shape).
const ShapeRealMesos = "real-mesos"

func (m *RealMesos) Name() string { return ShapeRealMesos }

func (m *RealMesos) agentCount() int { return max(1, m.Agents) }

func (m *RealMesos) Start(ctx context.Context) error {
	for _, b := range []string{"bin/mesos-master", "bin/mesos-agent", "libexec/mesos"} {
		if _, err := os.Stat(filepath.Join(m.Home, b)); err != nil {
			return fmt.Errorf("soak: real-mesos: no Mesos build at %s (-mesos-home): %w", m.Home, err)
		}
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return err
	}
	mport, err := loopback.Port()
	if err != nil {
		return err
	}
	// The registry is the replicated log (Mesos's default, what production masters keep), here one
	// replica in the work directory: a restarted master knows its agents and waits for them to
	// register again. With the in-memory registry it answers reconciliation "task unknown" for
	// every task of an agent not back yet, and runs that finished during the restart go to history
	// as failed. A lost agent is marked unreachable after 3 missed pings of 2 s, not the default 75
	// s: its tasks go UNREACHABLE within the nemesis's gaps.
	m.master = &proc{name: "mesos-master", bin: filepath.Join(m.Home, "bin/mesos-master"), log: filepath.Join(m.Dir, "mesos-master.log"),
		args: []string{"--ip=127.0.0.1", "--hostname=127.0.0.1", "--port=" + strconv.Itoa(mport),
			"--work_dir=" + filepath.Join(m.Dir, "mesos-master"), "--registry=replicated_log", "--quorum=1",
			"--agent_ping_timeout=2secs", "--max_agent_ping_timeouts=3"}}
	if err := m.master.start(); err != nil {
		return err
	}
	m.mesosURL = "http://127.0.0.1:" + strconv.Itoa(mport)
	for i := range m.agentCount() {
		port, err := loopback.Port()
		if err != nil {
			return err
		}
		res := m.Resources
		if res == "" {
			lo := 31000 + 1000*i
			res = fmt.Sprintf("cpus:2;mem:4096;disk:10240;ports:[%d-%d]", lo, lo+999)
		}
		a := &mesosAgent{name: "mesos-agent" + strconv.Itoa(i+1), port: port, home: m.Home, dir: m.Dir, res: res, mport: mport}
		m.agents = append(m.agents, a)
		if err := a.start(true); err != nil {
			return err
		}
	}
	if err := m.awaitAgents(ctx, 2*time.Minute); err != nil {
		return err
	}
	// A task unreachable for 20 s (its agent lost) counts as lost and
	// fails over within the run, not after the default 10 min.
	m.Extra = append([]string{"--offer-refuse-seconds", "1s", "--executor-idle-timeout", "60s", "--task-unreachable-timeout", "20s"}, m.Extra...)
	return m.startSchedulers(ctx)
}

// workDir is the agent's current work directory (and its runtime
// directory beside it: two agents on one machine must not share Mesos's
// default /var/run/mesos).
func (a *mesosAgent) workDir() string {
	return filepath.Join(a.dir, a.name+"-"+strconv.Itoa(a.lives))
}

// start starts the agent; fresh starts it on a new work directory (a new
// agent id), else on the last one (recovery).
func (a *mesosAgent) start(fresh bool) error {
	if fresh || a.lives == 0 {
		a.lives++
	}
	w := a.workDir()
	a.p = &proc{name: a.name, bin: filepath.Join(a.home, "bin/mesos-agent"), log: filepath.Join(a.dir, a.name+".log"),
		args: []string{"--master=127.0.0.1:" + strconv.Itoa(a.mport), "--ip=127.0.0.1", "--hostname=127.0.0.1",
			"--port=" + strconv.Itoa(a.port), "--work_dir=" + w, "--runtime_dir=" + w + "-run",
			"--fetcher_cache_dir=" + filepath.Join(a.dir, a.name+"-fetch"), "--launcher=posix",
			"--isolation=posix/cpu,posix/mem", "--no-systemd_enable_support", "--resources=" + a.res,
			"--launcher_dir=" + filepath.Join(a.home, "libexec/mesos")}}
	return a.p.start()
}

// killSandboxes kills every process whose working directory is under one
// of the agent's work directories: with the posix launcher an agent's
// executors and tasks outlive it by design; a lost node takes them along.
func (a *mesosAgent) killSandboxes() int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*")
	prefix := filepath.Join(a.dir, a.name+"-")
	for _, p := range procs {
		cwd, err := os.Readlink(p + "/cwd")
		if err != nil || !strings.HasPrefix(cwd, prefix) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// masterState is the part of the master's /state the shape reads.
type masterState struct {
	ActivatedSlaves float64 `json:"activated_slaves"`
}

// awaitAgents waits until the master has every agent registered.
func (m *RealMesos) awaitAgents(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		var st masterState
		if getJSON(ctx, m.mesosURL+"/state", &st) == nil && int(st.ActivatedSlaves) >= m.agentCount() {
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	b, _ := os.ReadFile(m.master.log)
	return fmt.Errorf("soak: real-mesos: %d agents not registered with the master within %s: %s", m.agentCount(), bound, tail(b, 600))
}

// renamed gives the etcd shape's faults the names they have here (its
// agent link is the master's) and leaves out mesos-local's.
var renamed = map[string]string{
	"leader-cut-from-agents": "leader-cut-from-master",
	"leader-agents-loss":     "leader-master-loss",
	"agents-killed":          "",
}

func (m *RealMesos) Faults() []FaultKind {
	var out []FaultKind
	for _, k := range m.Etcd.Faults() {
		if n, ok := renamed[k.Name]; ok {
			if n == "" {
				continue
			}
			k.Name = n
		}
		out = append(out, k)
	}
	agent := func(rng *rand.Rand) *mesosAgent { return m.agents[rng.IntN(len(m.agents))] }
	return append(out,
		FaultKind{Name: "standby-paused", MinHold: m.lease() + time.Second, MaxHold: m.lease() + 4*time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			s, err := m.standby(ctx, rng)
			if err != nil {
				return nil, "", err
			}
			if err := s.p.signal(syscall.SIGSTOP); err != nil {
				return nil, "", err
			}
			return func(context.Context) error { return s.p.signal(syscall.SIGCONT) }, s.p.name, nil
		}},
		FaultKind{Name: AgentKilled, MinHold: time.Second, MaxHold: 6 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			a := agent(rng)
			a.p.kill()
			return func(ctx context.Context) error { return m.restartAgent(ctx, a, false) }, a.name, nil
		}},
		FaultKind{Name: AgentLost, MinHold: 8 * time.Second, MaxHold: 15 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			a := agent(rng)
			a.p.kill()
			n := a.killSandboxes()
			return func(ctx context.Context) error { return m.restartAgent(ctx, a, true) }, fmt.Sprintf("%s (%d processes)", a.name, n), nil
		}},
		FaultKind{Name: MasterKilled, MinHold: time.Second, MaxHold: 6 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			m.master.kill()
			return func(ctx context.Context) error {
				if err := m.master.start(); err != nil {
					return err
				}
				return m.awaitAgents(ctx, time.Minute)
			}, "mesos-master", nil
		}},
	)
}

// The real-Mesos shape's own fault kinds (the checker reads them).
const (
	AgentKilled  = "agent-killed"  // kill -9 of a mesos-agent, restarted on its work directory
	AgentLost    = "agent-lost"    // a mesos-agent and its sandboxes killed, back as a new agent
	MasterKilled = "master-killed" // kill -9 of the mesos-master, restarted (its registry in the replicated log)
)

func (m *RealMesos) restartAgent(ctx context.Context, a *mesosAgent, fresh bool) error {
	if err := a.start(fresh); err != nil {
		return err
	}
	return m.awaitAgents(ctx, time.Minute)
}

func (m *RealMesos) Heal(ctx context.Context) error {
	errs := []error{m.Etcd.Heal(ctx)}
	if m.master != nil {
		_ = m.master.signal(syscall.SIGCONT)
		if !m.master.running() {
			errs = append(errs, m.master.start())
		}
	}
	for _, a := range m.agents {
		if a.p != nil && !a.p.running() {
			errs = append(errs, a.start(false))
		}
	}
	if m.master != nil {
		errs = append(errs, m.awaitAgents(ctx, time.Minute))
	}
	return errors.Join(errs...)
}

func (m *RealMesos) Stop() error {
	err := m.Etcd.Stop()
	for _, a := range m.agents {
		if a.p != nil {
			a.p.stop(10 * time.Second)
		}
		a.killSandboxes()
	}
	if m.master != nil {
		m.master.stop(10 * time.Second)
	}
	return err
}

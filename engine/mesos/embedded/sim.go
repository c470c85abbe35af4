package embedded

import (
	"fmt"
	"time"
)

// SimConfig turns the cluster into a simulated one, for tests and
// benchmarks only: Agents agents of AgentCPUs/AgentMemMB/AgentDiskMB (and
// Config.Ports) each, whose executors run no process. Everything a
// scheduler talks to is the real master: offers, allocation, decline
// filters, suppress/revive, executors and tasks charged to their agent,
// reliable status updates with acknowledgements and retries, kills and
// reconciliation. Only "start an executor process and run the task" is
// replaced: a simulated executor subscribes at once, answers LAUNCH with
// TASK_RUNNING (it starts at once, as a cached app does), ends the task after a random duration in
// [TaskMin, TaskMax] with TASK_FINISHED (TASK_FAILED for a FailRatio
// share), sending each update through the agent's executor UPDATE path,
// and exits after ExecutorIdle without a task, like the real executor.
// Simulated agents have no sandboxes and no isolation.
type SimConfig struct {
	Agents      int     // number of agents, 1..MaxSimAgents
	AgentCPUs   float64 // per agent, default 8
	AgentMemMB  float64 // per agent, default 32768
	AgentDiskMB float64 // per agent, default DefaultDiskMB
	// TaskMin and TaskMax bound how long a task runs (uniformly drawn);
	// TaskMax 0 means TaskMin. Default 0: tasks end at once.
	TaskMin, TaskMax time.Duration
	// FailRatio is the share of tasks that end TASK_FAILED, in [0, 1].
	FailRatio float64
	// ExecutorIdle is how long an executor without tasks lives on, default
	// 10s (the real executor's --idle-timeout).
	ExecutorIdle time.Duration
	// Seed makes durations and failures reproducible; 0 picks one.
	Seed uint64
	// Record, if set, is told when a simulated task starts (TASK_RUNNING)
	// and ends (its terminal update), with the cluster's mutex held: keep
	// it short (an append to a file). The fault soak's recorder uses it.
	Record func(SimEvent)
}

// SimEvent is a simulated task's start or end, for SimConfig.Record.
type SimEvent struct {
	Start  bool   // true: TASK_RUNNING; false: the terminal update
	TaskID string // the task id
	State  string // the update's state (TASK_RUNNING, TASK_FINISHED, ...)
	At     time.Time
	Data   []byte // the task's TaskInfo.data (the scheduler's payload)
}

// MaxSimAgents bounds SimConfig.Agents.
const MaxSimAgents = 100_000

// DefaultSimExecutorIdle is SimConfig.ExecutorIdle when zero.
const DefaultSimExecutorIdle = 10 * time.Second

func (s SimConfig) withDefaults() (SimConfig, error) {
	if s.AgentCPUs == 0 {
		s.AgentCPUs = 8
	}
	if s.AgentMemMB == 0 {
		s.AgentMemMB = 32768
	}
	if s.AgentDiskMB == 0 {
		s.AgentDiskMB = DefaultDiskMB
	}
	if s.TaskMax == 0 {
		s.TaskMax = s.TaskMin
	}
	if s.ExecutorIdle == 0 {
		s.ExecutorIdle = DefaultSimExecutorIdle
	}
	switch {
	case s.Agents < 1 || s.Agents > MaxSimAgents:
		return s, fmt.Errorf("%w: Sim.Agents %d must be in 1..%d", ErrConfig, s.Agents, MaxSimAgents)
	case s.AgentCPUs < 0 || s.AgentMemMB < 0 || s.AgentDiskMB < 0:
		return s, fmt.Errorf("%w: negative simulated agent resources", ErrConfig)
	case s.TaskMin < 0 || s.TaskMax < s.TaskMin:
		return s, fmt.Errorf("%w: simulated task duration %s-%s must satisfy 0 <= min <= max", ErrConfig, s.TaskMin, s.TaskMax)
	case !(s.FailRatio >= 0 && s.FailRatio <= 1):
		return s, fmt.Errorf("%w: Sim.FailRatio %v must be in [0, 1]", ErrConfig, s.FailRatio)
	case s.ExecutorIdle < 0:
		return s, fmt.Errorf("%w: Sim.ExecutorIdle %s must not be negative", ErrConfig, s.ExecutorIdle)
	}
	return s, nil
}

// durations renders the task duration setting for logs.
func (s SimConfig) durations() string {
	if s.TaskMin == s.TaskMax {
		return s.TaskMin.String()
	}
	return s.TaskMin.String() + "-" + s.TaskMax.String()
}

// simAgents makes the simulated agents: ids <master>-S<i>, host names
// sim-0000, sim-0001, …, each with the configured resources and cfg's ports.
func simAgents(cfg Config, masterID string) ([]*agent, error) {
	per := cfg
	per.CPUs, per.MemMB, per.DiskMB = cfg.Sim.AgentCPUs, cfg.Sim.AgentMemMB, cfg.Sim.AgentDiskMB
	total, err := agentResources(per)
	if err != nil {
		return nil, err
	}
	out := make([]*agent, cfg.Sim.Agents)
	for i := range out {
		out[i] = newAgent(i, fmt.Sprintf("%s-S%d", masterID, i), fmt.Sprintf("sim-%04d", i), total.Clone(), true)
	}
	return out, nil
}

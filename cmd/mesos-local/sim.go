package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
)

// simFlags are the flags of the simulated cluster mode (tests and
// benchmarks only): --sim-agents N turns it on; the other --sim-* flags
// are refused without it, and the real agent's resource flags with it.
type simFlags struct {
	agents   int
	cpus     float64
	memMB    float64
	diskMB   float64
	duration string
	fail     float64
	idle     time.Duration
	seed     uint64
	record   string
}

const simUsage = `
Simulated cluster (TEST AND BENCHMARK MODE ONLY): --sim-agents N replaces
this machine's agent with N simulated agents (sim-0000, sim-0001, ...)
whose executors and tasks run no process: every task sends TASK_RUNNING
(it starts at once, as a cached app does), then TASK_FINISHED (TASK_FAILED for --sim-fail-ratio of
them) after --sim-task-duration. Offers, allocation, filters, suppress and
revive, acknowledgements and status updates are the real master's. Jobs
"run" without doing anything: never point a production scheduler at it.

`

func (s *simFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&s.agents, "sim-agents", 0, "TEST/BENCHMARK MODE: simulate this many agents whose tasks run no process (0: off; see above)")
	fs.Float64Var(&s.cpus, "sim-agent-cpus", 8, "CPUs of each simulated agent")
	fs.Float64Var(&s.memMB, "sim-agent-mem-mb", 32768, "memory of each simulated agent in MB")
	fs.Float64Var(&s.diskMB, "sim-agent-disk-mb", embedded.DefaultDiskMB, "disk of each simulated agent in MB")
	fs.StringVar(&s.duration, "sim-task-duration", "1s", "how long a simulated task runs: a duration (2s) or a range drawn uniformly (2s-5s)")
	fs.Float64Var(&s.fail, "sim-fail-ratio", 0, "share of simulated tasks that end TASK_FAILED, 0..1")
	fs.DurationVar(&s.idle, "sim-executor-idle", embedded.DefaultSimExecutorIdle, "a simulated executor without tasks exits after this long")
	fs.Uint64Var(&s.seed, "sim-seed", 0, "seed of the simulated durations and failures (0: random)")
	fs.StringVar(&s.record, "sim-record", "", "append each simulated task's start and end to this file as JSON lines (the fault soak's run log; soak/runlog)")
}

// check refuses --sim-* flags without --sim-agents, and the real agent's
// resource flags with it.
func (s *simFlags) check(fs *flag.FlagSet) error {
	var simSet, realSet []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "sim-agents":
		case strings.HasPrefix(f.Name, "sim-"):
			simSet = append(simSet, "--"+f.Name)
		case f.Name == "cpus" || f.Name == "mem-mb" || f.Name == "disk-mb":
			realSet = append(realSet, "--"+f.Name)
		}
	})
	switch {
	case s.agents < 0 || s.agents > embedded.MaxSimAgents:
		return fmt.Errorf("--sim-agents %d: want 0..%d", s.agents, embedded.MaxSimAgents)
	case s.agents == 0 && len(simSet) > 0:
		return fmt.Errorf("%s only apply to the simulated cluster: add --sim-agents N (test and benchmark mode)", strings.Join(simSet, ", "))
	case s.agents > 0 && len(realSet) > 0:
		return fmt.Errorf("%s describe this machine's agent, which --sim-agents replaces: use --sim-agent-cpus, --sim-agent-mem-mb, --sim-agent-disk-mb", strings.Join(realSet, ", "))
	}
	if s.agents == 0 {
		return nil
	}
	_, err := s.config()
	return err
}

// config is the embedded.SimConfig of the flags; nil when off.
func (s *simFlags) config() (*embedded.SimConfig, error) {
	if s.agents == 0 {
		return nil, nil
	}
	lo, hi, err := parseDurationRange(s.duration)
	if err != nil {
		return nil, fmt.Errorf("--sim-task-duration %q: %w", s.duration, err)
	}
	switch {
	case s.cpus <= 0 || s.memMB <= 0 || s.diskMB < 0:
		return nil, errors.New("--sim-agent-cpus and --sim-agent-mem-mb must be positive, --sim-agent-disk-mb not negative")
	case !(s.fail >= 0 && s.fail <= 1):
		return nil, fmt.Errorf("--sim-fail-ratio %v: want 0..1", s.fail)
	case s.idle <= 0:
		return nil, fmt.Errorf("--sim-executor-idle %s: want a positive duration", s.idle)
	}
	return &embedded.SimConfig{Agents: s.agents, AgentCPUs: s.cpus, AgentMemMB: s.memMB, AgentDiskMB: s.diskMB,
		TaskMin: lo, TaskMax: hi, FailRatio: s.fail, ExecutorIdle: s.idle, Seed: s.seed}, nil
}

// parseDurationRange parses "2s" or "2s-5s".
func parseDurationRange(s string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if lo, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return 0, 0, err
		}
	}
	if lo < 0 || hi < lo {
		return 0, 0, errors.New("want 0 <= min <= max")
	}
	return lo, hi, nil
}

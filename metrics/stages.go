package metrics

import (
	"encoding/json"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/prometheus/client_golang/prometheus"
)

// The launch path, split into stages (elasticjob_launch_stage_seconds
// {stage}); each stage runs from the end of the one before:
//
//	commit    a trigger's ready entry: its commit began → the commit returned (the API)
//	seen      committed (a cron fire: the later of its commit and its instant) → the
//	          leader saw the entry (0 when the launch round that took it ran on the
//	          API's wake-up, before the store's watch told of it)
//	accept    seen → the ACCEPT that launches the task was sent
//	agent     ACCEPT sent → the executor received the LAUNCH (the master, the agent,
//	          an executor start when none runs for the app)
//	executor  LAUNCH received → the executor began to start the process (the app's
//	          fetch or cache hit, extraction, the sandbox)
//	fork      the process start (fork and exec) → it returned
//	running   the process started → its TASK_RUNNING reached the scheduler
//
// commit and seen are observed once per execution (a trigger or a fire),
// the others once per task; a failover launch has no commit or seen.
// agent and running span the scheduler's and the agent's clocks: on a
// cluster they include the clock offset, and values below zero are
// dropped. Everything is kept in memory on the observer's side: no
// registry reads or writes are added to the launch path.
const (
	StageCommit   = "commit"
	StageSeen     = "seen"
	StageAccept   = "accept"
	StageAgent    = "agent"
	StageExecutor = "executor"
	StageFork     = "fork"
	StageRunning  = "running"
)

// Stages lists the stages in launch order.
var Stages = []string{StageCommit, StageSeen, StageAccept, StageAgent, StageExecutor, StageFork, StageRunning}

// stageBuckets are finer than latencyBuckets below 2 ms: forks and
// in-process hops take tens to hundreds of microseconds.
var stageBuckets = []float64{.000025, .00005, .0001, .00025, .0005, .00075, .001, .0015, .002, .003, .004, .005,
	.0075, .01, .015, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// maxTracked bounds the in-memory maps (entries of tasks or jobs whose end
// was never seen, e.g. across a leader change, would otherwise pile up).
const maxTracked = 200_000

// pending is a job's ready entry as the stage metrics follow it, one per
// job: its times are wall-clock nanoseconds (unixNano), 32 bytes where
// three time.Time took 80 (BenchmarkJobSeriesHeap: 242 → 179 heap bytes per job).
type pending struct {
	committed int64 // when its commit returned (a fire: the later of that and its instant)
	queued    int64 // the launch's TaskEvent.Queued, once used
	seen      int64 // when the leader saw it, once used
	fired     int64 // a cron fire's instant (0: a trigger), for the namespace's fire lateness
	used      bool  // a launch took it; later shards of that launch reuse seen
}

func newStageHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "elasticjob_launch_stage_seconds",
		Help:    "The launch path by stage: commit, seen, accept, agent, executor, fork, running (see docs/operations.md, Metrics).",
		Buckets: stageBuckets}, []string{"stage"})
}

// stageObservers are the histogram's children, looked up once.
type stageObservers map[string]prometheus.Observer

func newStageObservers(h *prometheus.HistogramVec) stageObservers {
	o := stageObservers{}
	for _, s := range Stages {
		o[s] = h.WithLabelValues(s)
	}
	return o
}

// observe records d when both ends are known and d is not negative.
func (o stageObservers) observe(stage string, from, to time.Time) {
	if from.IsZero() || to.IsZero() || to.Before(from) {
		return
	}
	o[stage].Observe(to.Sub(from).Seconds())
}

// TriggerCommitted observes a trigger's commit (api.Options.Jobs.TriggerCommitted)
// and remembers when the execution became launchable.
func (m *Metrics) TriggerCommitted(job string, queued, committed time.Time) {
	m.stages.observe(StageCommit, queued, committed)
	m.noteCommitted(job, committed, time.Time{})
}

func (m *Metrics) noteCommitted(job string, at, fired time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.pend[job]; ok && !p.used {
		return // an older execution still waits: the next launch is its
	}
	if len(m.pend) >= maxTracked {
		clear(m.pend)
	}
	m.pend[job] = pending{committed: clock.UnixNano(at), fired: clock.UnixNano(fired)}
}

// launchStages observes seen and accept for a launched task and remembers
// when its ACCEPT was sent. Called with m.mu held.
func (m *Metrics) launchStages(t observe.TaskEvent) {
	if len(m.accepted) >= maxTracked {
		clear(m.accepted)
	}
	m.accepted[t.TaskID] = t.At
	if t.Source == string(jobs.SourceFailover) {
		m.stages.observe(StageAccept, t.Queued, t.At)
		return
	}
	p, ok := m.pend[t.Job]
	committed := clock.FromUnixNano(p.committed)
	switch {
	case ok && !p.used && !committed.After(t.At):
		seen := laterOf(t.Queued, committed)
		m.stages.observe(StageSeen, committed, seen)
		m.stages.observe(StageAccept, seen, t.At)
		m.pend[t.Job] = pending{committed: p.committed, queued: clock.UnixNano(t.Queued), seen: clock.UnixNano(seen), used: true}
		if p.fired != 0 {
			m.admitted(t.Job, clock.FromUnixNano(p.fired), t.At)
		}
	case ok && p.used && p.queued == clock.UnixNano(t.Queued): // another shard of the same execution
		m.stages.observe(StageAccept, clock.FromUnixNano(p.seen), t.At)
	default:
		m.stages.observe(StageAccept, t.Queued, t.At)
	}
}

// runningReport is the part of the executor's TASK_RUNNING data
// (executor.Report) the stages read.
type runningReport struct {
	LaunchTime *time.Time `json:"launchTime"`
	ForkTime   *time.Time `json:"forkTime"`
	StartTime  *time.Time `json:"startTime"`
}

// runningStages observes agent, executor, fork and running from a task's
// first TASK_RUNNING. Called with m.mu held.
func (m *Metrics) runningStages(t observe.TaskEvent, st engine.Status) {
	accepted, ok := m.accepted[t.TaskID]
	if !ok {
		return // not launched by this instance, or RUNNING seen already
	}
	delete(m.accepted, t.TaskID)
	var r runningReport
	if len(st.Data) == 0 || json.Unmarshal(st.Data, &r) != nil {
		return // another executor's data
	}
	launch, fork, start := deref(r.LaunchTime), deref(r.ForkTime), deref(r.StartTime)
	m.stages.observe(StageAgent, accepted, launch)
	if !fork.IsZero() {
		m.stages.observe(StageExecutor, launch, fork)
		m.stages.observe(StageFork, fork, start)
	}
	m.stages.observe(StageRunning, start, t.At)
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

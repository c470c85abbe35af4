package metrics

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
	"github.com/prometheus/client_golang/prometheus"
)

// The registry's state, read when /metrics is scraped (from this
// instance's in-memory copy of the registry, never on the launch path),
// and exported only while this instance leads, so sums over instances
// count each task once.

// stateTimeout bounds one scrape's registry reads.
const stateTimeout = 10 * time.Second

var (
	runningDesc = prometheus.NewDesc("elasticjob_running_tasks",
		"Tasks recorded as running (staging, starting, running, killing, unreachable; a DAEMON shard's retiring task too), by job.", []string{"job", "namespace"}, nil)
	cpusDesc = prometheus.NewDesc("elasticjob_running_cpus",
		"CPUs the running tasks asked for (the job's cpuCount per task), by job.", []string{"job", "namespace"}, nil)
	memDesc = prometheus.NewDesc("elasticjob_running_memory_mb",
		"Memory in MB the running tasks asked for (the job's memoryMB per task), by job.", []string{"job", "namespace"}, nil)
	readyExecDesc = prometheus.NewDesc("elasticjob_ready_queue_executions",
		"Executions waiting in the ready queue (every job's pending count).", nil, nil)
	failoverDesc = prometheus.NewDesc("elasticjob_failover_queue_tasks",
		"Failed shards waiting in the failover queue to run again.", nil, nil)
	oldestDesc = prometheus.NewDesc("elasticjob_queue_oldest_seconds",
		"Age of the oldest launchable work by queue (ready, failover): due, its job not running, not yet launched; 0 when none.",
		[]string{"queue"}, nil)
	pausedDesc = prometheus.NewDesc("elasticjob_jobs_paused",
		"Jobs pauseAfterFailures disabled (until re-enabled).", nil, nil)
)

// state is the collector of the registry's state.
type state struct {
	m     *Metrics
	reg   *registry.Registry
	clock clock.Clock
	errs  prometheus.Counter
}

// ObserveRegistry exports what reg holds at each scrape while this
// instance leads: running tasks and their resources by job, the queues'
// depths and the age of their oldest launchable work, paused jobs.
func (m *Metrics) ObserveRegistry(reg *registry.Registry, clk clock.Clock) {
	if clk == nil {
		clk = clock.Real{}
	}
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "elasticjob_state_read_errors_total",
		Help: "Scrapes whose registry reads failed (their state metrics were left out)."})
	m.Register(&state{m: m, reg: reg, clock: clk, errs: errs}, errs)
}

func (s *state) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{runningDesc, cpusDesc, memDesc, readyExecDesc, failoverDesc, oldestDesc, pausedDesc} {
		ch <- d
	}
}

func (s *state) Collect(ch chan<- prometheus.Metric) {
	if !s.m.leading.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	running, err := s.reg.Work().RunningTasks(ctx)
	var retiring map[string]map[int]registry.Retiring
	if err == nil {
		retiring, err = s.reg.Work().RetiringTasks(ctx)
	}
	if err == nil {
		s.collectRunning(ctx, ch, running, retiring)
		err = s.collectQueues(ctx, ch, running)
	}
	if err == nil {
		var paused map[string]task.Pause
		if paused, err = s.reg.Work().Pauses(ctx); err == nil {
			ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, float64(len(paused)))
		}
	}
	if err != nil {
		s.errs.Inc()
	}
}

// collectRunning exports each job's running tasks and what they asked for; a DAEMON
// shard's retiring task (its move overlapping) counts beside its replacement, since it
// holds its resources, and its namespace's usage counts it, until it ends.
func (s *state) collectRunning(ctx context.Context, ch chan<- prometheus.Metric, running map[string]map[int]task.Entry,
	retiring map[string]map[int]registry.Retiring) {
	count := make(map[string]int, len(running)+len(retiring))
	for job, tasks := range running {
		count[job] += len(tasks)
	}
	for job, tasks := range retiring {
		count[job] += len(tasks)
	}
	for job, k := range count {
		n := float64(k)
		name, ns := jobLabels(job)
		ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, n, name, ns)
		cfg, err := s.reg.Config().Job(ctx, job)
		if err != nil {
			continue // deleted while its tasks end: no resources to tell
		}
		ch <- prometheus.MustNewConstMetric(cpusDesc, prometheus.GaugeValue, n*cfg.CPUCount, name, ns)
		ch <- prometheus.MustNewConstMetric(memDesc, prometheus.GaugeValue, n*cfg.MemoryMB, name, ns)
	}
}

// collectQueues exports the queues' depths and the age of their oldest
// launchable work: due (past NotBefore), and of a job (ready) or shard
// (failover) that is not running, since such an entry waits for that run
// by design.
func (s *state) collectQueues(ctx context.Context, ch chan<- prometheus.Metric, running map[string]map[int]task.Entry) error {
	now := s.clock.Now()
	ready, err := s.reg.Work().ReadyQueue(ctx)
	if err != nil {
		return err
	}
	var execs int
	var oldestReady time.Time
	for _, rd := range ready {
		execs += rd.Count
		if len(running[rd.Job]) == 0 {
			oldestReady = older(oldestReady, laterOf(rd.Since, rd.NotBefore), now)
		}
	}
	fq, err := s.reg.Work().FailoverQueue(ctx)
	if err != nil {
		return err
	}
	var oldestFailover time.Time
	for _, f := range fq {
		if _, busy := running[f.Job][f.Item]; !busy {
			oldestFailover = older(oldestFailover, laterOf(f.Since, f.NotBefore), now)
		}
	}
	ch <- prometheus.MustNewConstMetric(readyExecDesc, prometheus.GaugeValue, float64(execs))
	ch <- prometheus.MustNewConstMetric(failoverDesc, prometheus.GaugeValue, float64(len(fq)))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age(oldestReady, now), "ready")
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age(oldestFailover, now), "failover")
	return nil
}

// older returns the earlier of oldest and t, ignoring t when it is still
// ahead of now (staged, or backing off).
func older(oldest, t, now time.Time) time.Time {
	if t.After(now) {
		return oldest
	}
	if oldest.IsZero() || t.Before(oldest) {
		return t
	}
	return oldest
}

func age(t, now time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return now.Sub(t).Seconds()
}

package metrics

import (
	"encoding/json"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/task"
	"github.com/prometheus/client_golang/prometheus"
)

// Runs, as the metrics follow them from the observer's calls (in memory,
// on the leader; a new leader starts from nothing):
//
//   - a TRANSIENT job's run is the tasks in flight together: it begins
//     with a launch when none of the job's tasks is in flight and ends
//     when the last of them ends. It failed when a task failed (FAILED,
//     LOST, ERROR, …), it succeeded when none failed and one finished;
//     killed tasks count neither way. A retry or failover relaunch after
//     the job's other tasks ended is a run of its own here (the
//     scheduler's pauseAfterFailures counts a run's retries within
//     maxRetries as one run), so the streak counts attempts.
//   - a DAEMON job's runs are the executor's run reports (DaemonRun).
//
// elasticjob_job_failed_runs_in_a_row{job} is the streak of failed runs
// (exported while > 0, so a job that recovers leaves no series);
// elasticjob_last_run_duration_seconds{job} is the last run's duration:
// from its first process start to its last task's end (the executor's
// clock).

// jobRun is a job's run in progress and its failure streak.
type jobRun struct {
	inflight         int
	failed, finished bool
	first, last      time.Time // first process start, last task end
	streak           int       // failed runs in a row before this one
}

// terminalReport is the part of the executor's terminal status data
// (executor.Report) a run's duration is read from.
type terminalReport struct {
	StartTime    *time.Time `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
}

// runLaunched counts a task into its job's run. Called with m.mu held.
func (m *Metrics) runLaunched(t observe.TaskEvent) {
	if t.Source == string(jobs.SourceFailover) {
		m.count(t.Job, func(c *jobCounts) { c.relaunched++ })
	}
	if !t.Transient {
		return
	}
	r := m.run(t.Job)
	if r.inflight == 0 {
		*r = jobRun{streak: r.streak}
	}
	r.inflight++
}

// runEnded counts a transient task's end into its job's run. Called with
// m.mu held.
func (m *Metrics) runEnded(t observe.TaskEvent, st engine.Status) {
	r := m.run(t.Job)
	r.inflight = max(r.inflight-1, 0)
	switch {
	case st.State == task.Finished:
		r.finished = true
	case st.State != task.Killed:
		r.failed = true
	}
	var rep terminalReport
	if len(st.Data) > 0 && json.Unmarshal(st.Data, &rep) == nil && rep.StartTime != nil && rep.CompleteTime != nil {
		if r.first.IsZero() || rep.StartTime.Before(r.first) {
			r.first = *rep.StartTime
		}
		if rep.CompleteTime.After(r.last) {
			r.last = *rep.CompleteTime
		}
	}
	if r.inflight > 0 {
		return
	}
	switch {
	case r.failed:
		r.streak++
	case r.finished:
		r.streak = 0
	}
	if !r.first.IsZero() && !r.last.Before(r.first) {
		m.setLastDuration(t.Job, r.last.Sub(r.first).Seconds())
	}
	m.forgetIdle(t.Job, r)
}

// DaemonRun counts a DAEMON job's completed run (observe.Daemons).
func (m *Metrics) DaemonRun(t observe.TaskEvent, rep jobs.DaemonReport) {
	if rep.Type != jobs.DaemonComplete {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(t.Job)
	if rep.Success {
		r.streak = 0
	} else {
		r.streak++
	}
	if !rep.StartTime.IsZero() && !rep.CompleteTime.Before(rep.StartTime) {
		m.setLastDuration(t.Job, rep.CompleteTime.Sub(rep.StartTime).Seconds())
	}
	m.forgetIdle(t.Job, r)
}

// setLastDuration sets job's last run duration. Called with m.mu held.
func (m *Metrics) setLastDuration(job string, seconds float64) {
	m.count(job, func(c *jobCounts) { c.lastDuration, c.hasDuration = seconds, true })
}

func (m *Metrics) run(job string) *jobRun {
	r := m.runs[job]
	if r == nil {
		if len(m.runs) >= maxTracked {
			clear(m.runs)
		}
		r = &jobRun{}
		m.runs[job] = r
	}
	return r
}

// forgetIdle drops a job with nothing in flight and no failure streak.
func (m *Metrics) forgetIdle(job string, r *jobRun) {
	if r.inflight == 0 && r.streak == 0 {
		delete(m.runs, job)
	}
}

var streakDesc = prometheus.NewDesc("elasticjob_job_failed_runs_in_a_row",
	"Failed runs of a job in a row, as the leader saw them (exported while above 0; see README, Metrics).", []string{"job", "namespace"}, nil)

// collectStreaks sends the failure streaks. Called with m.mu held.
func (m *Metrics) collectStreaks(ch chan<- prometheus.Metric) {
	for job, r := range m.runs {
		if r.streak > 0 {
			name, ns := jobLabels(job)
			ch <- prometheus.MustNewConstMetric(streakDesc, prometheus.GaugeValue, float64(r.streak), name, ns)
		}
	}
}

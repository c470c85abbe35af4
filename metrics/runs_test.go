package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/task"
)

// endData is an executor's terminal report: the process ran from start to
// end (ms after t0).
func endData(start, end float64) []byte {
	return fmt.Appendf(nil, `{"hostname":"h","ip":"i","startTime":%q,"completeTime":%q}`,
		t0.Add(ms(start)).Format(time.RFC3339Nano), t0.Add(ms(end)).Format(time.RFC3339Nano))
}

// run launches one task per state and ends them in order; starts and ends
// are staggered so the run spans from the first start to the last end.
func run(m *Metrics, job, source string, states ...string) {
	evs := make([]observe.TaskEvent, len(states))
	for i := range states {
		evs[i] = observe.TaskEvent{TaskID: fmt.Sprintf("%s-%d-%p", job, i, &evs[i]), Job: job, Item: i, Source: source,
			Transient: true, Queued: t0, At: t0}
		m.Launched(evs[i])
	}
	for i, st := range states {
		m.StatusChanged(evs[i], engine.Status{TaskID: evs[i].TaskID, State: task.State(st), Data: endData(float64(10*i), float64(100+10*i))})
	}
}

func streak(t *testing.T, m *Metrics, job string) (float64, bool) {
	t.Helper()
	return gauge(t, m, "elasticjob_job_failed_runs_in_a_row", "job="+job+",namespace=default")
}

// A run fails when one of its tasks fails; failed runs in a row make the
// streak, a successful run ends it, killed tasks count neither way.
func TestFailedRunsInARow(t *testing.T) {
	m := New()
	m.Leading(true)
	run(m, "j", "NORMAL", "TASK_FINISHED", "TASK_FAILED")
	if n, ok := streak(t, m, "j"); !ok || n != 1 {
		t.Fatalf("after one failed run: streak %v (exported %v), want 1", n, ok)
	}
	run(m, "j", "FAILOVER", "TASK_LOST") // a relaunch that fails again is an attempt of its own
	run(m, "j", "NORMAL", "TASK_KILLED")
	if n, _ := streak(t, m, "j"); n != 2 {
		t.Fatalf("streak %v, want 2 (the killed run counts neither way)", n)
	}
	if d, ok := gauge(t, m, "elasticjob_last_run_duration_seconds", "job=j,namespace=default"); !ok || d != 0.1 {
		t.Errorf("last run duration %v (%v), want 0.1 s", d, ok)
	}
	run(m, "j", "NORMAL", "TASK_FINISHED", "TASK_FINISHED", "TASK_FINISHED")
	if _, ok := streak(t, m, "j"); ok {
		t.Error("a job whose last run succeeded still exports a streak")
	}
	if d, _ := gauge(t, m, "elasticjob_last_run_duration_seconds", "job=j,namespace=default"); d != 0.12 {
		t.Errorf("last run duration %v, want 0.12 s (first start to last end)", d)
	}
	if len(m.runs) != 0 {
		t.Errorf("an idle job with no streak is still tracked: %v", m.runs)
	}
	if s := series(t, m, "elasticjob_tasks_relaunched_total", "job=j,namespace=default"); s == nil || s.GetCounter().GetValue() != 1 {
		t.Errorf("relaunches = %v, want 1", s)
	}
}

// A task of a run in flight keeps the run open: the run fails once,
// however many of its tasks fail.
func TestARunFailsOnce(t *testing.T) {
	m := New()
	a := observe.TaskEvent{TaskID: "a", Job: "j", Transient: true}
	b := observe.TaskEvent{TaskID: "b", Job: "j", Item: 1, Transient: true}
	m.Launched(a)
	m.Launched(b)
	m.StatusChanged(a, engine.Status{State: "TASK_FAILED"})
	retry := observe.TaskEvent{TaskID: "a2", Job: "j", Source: "FAILOVER", Transient: true}
	m.Launched(retry) // joins the run in flight
	m.StatusChanged(b, engine.Status{State: "TASK_FAILED"})
	m.StatusChanged(retry, engine.Status{State: "TASK_FAILED"})
	if n, _ := streak(t, m, "j"); n != 1 {
		t.Errorf("streak %v, want 1", n)
	}
	// An end this instance never saw launched (another leader's task) ends
	// a run of its own.
	m.StatusChanged(observe.TaskEvent{TaskID: "old", Job: "j", Transient: true}, engine.Status{State: "TASK_ERROR"})
	if n, _ := streak(t, m, "j"); n != 2 {
		t.Errorf("streak %v, want 2", n)
	}
}

// DAEMON jobs count the runs their executors report.
func TestDaemonRuns(t *testing.T) {
	m := New()
	ev := observe.TaskEvent{TaskID: "d", Job: "daemon"}
	m.Launched(ev)
	rep := func(ok bool) jobs.DaemonReport {
		return jobs.DaemonReport{Type: jobs.DaemonComplete, Success: ok, StartTime: t0, CompleteTime: t0.Add(ms(250))}
	}
	m.DaemonRun(ev, jobs.DaemonReport{Type: jobs.DaemonBegin, StartTime: t0})
	m.DaemonRun(ev, rep(false))
	m.DaemonRun(ev, rep(false))
	if n, _ := streak(t, m, "daemon"); n != 2 {
		t.Errorf("daemon streak %v, want 2", n)
	}
	m.StatusChanged(ev, engine.Status{State: "TASK_RUNNING"}) // a daemon's task states are not its runs
	m.DaemonRun(ev, rep(true))
	if _, ok := streak(t, m, "daemon"); ok {
		t.Error("streak exported after a successful daemon run")
	}
	if d, _ := gauge(t, m, "elasticjob_last_run_duration_seconds", "job=daemon,namespace=default"); d != 0.25 {
		t.Errorf("daemon last run %v, want 0.25", d)
	}
}

// A term's end forgets the job-labelled gauges: the next leader reports
// them.
func TestLeavingLeadershipClearsJobGauges(t *testing.T) {
	m := New()
	m.Leading(true)
	run(m, "j", "NORMAL", "TASK_FAILED")
	m.ReadyDepth(3)
	m.Leading(false)
	if _, ok := streak(t, m, "j"); ok {
		t.Error("streak kept after the term")
	}
	if _, ok := gauge(t, m, "elasticjob_last_run_duration_seconds", "job=j,namespace=default"); ok {
		t.Error("last run duration kept after the term")
	}
	if v, _ := gauge(t, m, "elasticjob_ready_queue_jobs", ""); v != 0 {
		t.Errorf("ready queue depth %v kept after the term", v)
	}
	if v, _ := gauge(t, m, "elasticjob_leader", ""); v != 0 {
		t.Errorf("leader = %v", v)
	}
}

package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	dto "github.com/prometheus/client_model/go"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// exported returns the names a live scheduler's /metrics serves: its
// metrics.Metrics with the registry's state and the trace writer's
// collectors registered (as cmd/scheduler wires them), after one task of
// every kind went through it so every labelled family has a series.
// Histograms and summaries count with their _bucket, _sum and _count.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New()
	reg := seededRegistry(t)
	m.ObserveRegistry(reg, clock.NewFake(t0.Add(time.Minute)))
	dir := t.TempDir()
	tw, err := trace.Open(t.Context(), trace.Options{DSN: filepath.Join(dir, "history.db"), SpoolDir: filepath.Join(dir, "spool")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tw.Close(t.Context()) })
	m.Register(tw.Collectors()...)
	m.Leading(true)
	drive(m)

	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names[f.GetName()+"_bucket"], names[f.GetName()+"_sum"], names[f.GetName()+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[f.GetName()+"_sum"], names[f.GetName()+"_count"] = true, true
		}
	}
	return names
}

// seededRegistry holds a running task, ready and failover work and a
// paused job.
func seededRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	reg := registry.New(kv)
	ctx := t.Context()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://example.invalid/app.tar.gz", "bin/start.sh"
	j := jobs.Default()
	j.JobName, j.AppName = "job", "app"
	if err := reg.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Config().AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Work().Trigger(ctx, "job", true, t0); err != nil {
		t.Fatal(err)
	}
	if err := reg.Change().
		Launch("job", 0, task.Entry{TaskID: "t", State: "TASK_RUNNING"}).
		FailOver("job", 1, queue.Failover{Since: t0}).
		Pause("job", task.Pause{By: task.PausedBy, At: t0, Reason: "r"}).
		Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return reg
}

// drive sends the observer one of everything it counts.
func drive(m *metrics.Metrics) {
	ts := func(d time.Duration) string { return `"` + t0.Add(d).Format(time.RFC3339Nano) + `"` }
	m.TriggerCommitted("job", t0, t0.Add(time.Millisecond))
	m.Fired("cron", t0, t0)
	m.ReadyDepth(1)
	m.OffersSeen(2, 1)
	m.Deadlines().DeadlineMissed(observe.DeadlineAlert{Kind: observe.DeadlineStart, Namespace: "default", Job: "job"}, observe.Hook{})
	m.Deadlines().StartEstimateError("default", time.Second, 0.1)
	for _, ev := range []observe.TaskEvent{
		{TaskID: "a", Job: "job", Transient: true, Queued: t0, At: t0.Add(2 * time.Millisecond)},
		{TaskID: "b", Job: "job", Item: 1, Source: string(jobs.SourceFailover), Transient: true, Queued: t0, At: t0.Add(3 * time.Millisecond)},
	} {
		m.Launched(ev)
		ev.At = t0.Add(10 * time.Millisecond)
		m.StatusChanged(ev, engine.Status{TaskID: ev.TaskID, State: "TASK_RUNNING",
			Data: []byte(`{"launchTime":` + ts(4*time.Millisecond) + `,"forkTime":` + ts(5*time.Millisecond) + `,"startTime":` + ts(6*time.Millisecond) + `}`)})
		state := map[string]string{"a": "TASK_FINISHED", "b": "TASK_FAILED"}[ev.TaskID]
		m.StatusChanged(ev, engine.Status{TaskID: ev.TaskID, State: task.State(state),
			Data: []byte(`{"startTime":` + ts(6*time.Millisecond) + `,"completeTime":` + ts(time.Second) + `}`)})
	}
}

var metricName = regexp.MustCompile(`\b(?:elasticjob|process|go)_[a-z0-9_]+\b`)

// checkExprs fails for every metric an expression names that the
// scheduler does not export, and returns the names used.
func checkExprs(t *testing.T, where string, exprs []string, names map[string]bool) map[string]bool {
	t.Helper()
	used := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			used[n] = true
			if !names[n] {
				t.Errorf("%s queries %s, which the scheduler does not export (in %q)", where, n, e)
			}
		}
	}
	return used
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *struct{ UID string }    `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		Expr       string                `json:"expr"`
		Datasource *struct{ UID string } `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct{ Name, Type, Query any } `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

// The dashboard parses, takes its data source from a variable, and every
// panel queries metrics the scheduler exports; it shows what the
// practice guide asks for.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/elasticjob.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/elasticjob.json does not parse: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q uid %q: both are needed to import", d.Title, d.UID)
	}
	dsVar := false
	for _, v := range d.Templating.List {
		dsVar = dsVar || (v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus")
	}
	if !dsVar {
		t.Error("no datasource variable of type datasource (query prometheus)")
	}
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	ids := map[int]bool{}
	var exprs []string
	for _, p := range all {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: want the ${datasource} variable and at least one query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: a query without an expression or the ${datasource} variable", p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	used := checkExprs(t, "the dashboard", exprs, exported(t))
	for _, want := range []string{
		"elasticjob_running_tasks", "elasticjob_last_run_duration_seconds", // running tasks, last run's duration
		"elasticjob_running_cpus", "elasticjob_running_memory_mb", "process_cpu_seconds_total", // resource use
		"elasticjob_tasks_ended_total", "elasticjob_tasks_relaunched_total", "elasticjob_job_failed_runs_in_a_row", // failures, restarts
		"elasticjob_fire_lateness_seconds_bucket", "elasticjob_ready_queue_executions", "elasticjob_failover_queue_tasks", // lateness, queues
		"elasticjob_queue_oldest_seconds", "elasticjob_leader", "elasticjob_launch_stage_seconds_bucket", "elasticjob_trace_spool_events",
	} {
		if !used[want] {
			t.Errorf("the dashboard shows no %s", want)
		}
	}
}

// Every alert queries metrics the scheduler exports, and the alerts the
// operators need are there.
func TestAlertsQueryExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("prometheus/alerts.yml does not parse: %v", err)
	}
	var exprs, alerts []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			alerts = append(alerts, r.Alert)
		}
	}
	checkExprs(t, "alerts.yml", exprs, exported(t))
	sort.Strings(alerts)
	got := strings.Join(alerts, " ")
	for _, want := range []string{"ElasticJobJobFailing", "ElasticJobWorkWaiting", "ElasticJobNoLeader", "ElasticJobSeveralLeaders", "ElasticJobTraceSpoolGrowing",
		"ElasticJobDeadlineMissed", "ElasticJobStartEstimatesOff"} {
		if !strings.Contains(got, want) {
			t.Errorf("alerts.yml has no %s (has %s)", want, got)
		}
	}
}

package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

func stateRig(t *testing.T) (*Metrics, *registry.Registry, *clock.Fake) {
	t.Helper()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	reg := registry.New(kv)
	ctx := t.Context()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://example.invalid/app.tar.gz", "bin/start.sh"
	if err := reg.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"busy", "waiting", "flaky", "idle"} {
		j := jobs.Default()
		j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = name, "app", 0.5, 64, 3
		if err := reg.Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	clk := clock.NewFake(t0)
	m := New()
	m.ObserveRegistry(reg, clk)
	return m, reg, clk
}

func commit(t *testing.T, ch *registry.Change) {
	t.Helper()
	if err := ch.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The registry's state is exported at scrape time, by the leader only.
func TestStateFromTheRegistry(t *testing.T) {
	m, reg, clk := stateRig(t)
	ctx := t.Context()
	for item := range 2 {
		commit(t, reg.Change().Launch("busy", item, task.Entry{TaskID: "busy@-@" + string(rune('0'+item)), State: "TASK_RUNNING"}))
	}
	commit(t, reg.Change().Launch("flaky", 1, task.Entry{TaskID: "f1", State: "TASK_RUNNING"}))
	// busy's shard 2 moves with an overlap: its old task still holds its resources (the
	// move queues busy's relaunch: one ready execution more).
	commit(t, reg.Change().Launch("busy", 2, task.Entry{TaskID: "busy@-@2", State: "TASK_RUNNING"}))
	moving, err := reg.Work().RunningOf(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	retire := reg.Change()
	if err := retire.Retire(ctx, "busy", 2, moving[2], t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	commit(t, retire)
	// ready: busy waits for its run (not launchable), waiting for 30 s, idle staged ahead.
	for _, tr := range []struct {
		job string
		at  time.Time
	}{{"busy", t0.Add(-time.Hour)}, {"waiting", t0.Add(-30 * time.Second)}, {"waiting", t0.Add(-10 * time.Second)}} {
		if _, err := reg.Work().Trigger(ctx, tr.job, true, tr.at); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Work().TriggerMany(ctx, map[string]bool{"idle": false}, t0.Add(-time.Second), t0.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	// failover: flaky's shard 0 waits 20 s, its shard 1 runs again already, shard 2 backs off.
	commit(t, reg.Change().
		FailOver("flaky", 0, queue.Failover{Since: t0.Add(-20 * time.Second)}).
		FailOver("flaky", 1, queue.Failover{Since: t0.Add(-time.Hour)}).
		FailOver("flaky", 2, queue.Failover{Since: t0.Add(-time.Hour), NotBefore: t0.Add(time.Minute)}).
		Pause("idle", task.Pause{By: task.PausedBy, At: t0, FailedRuns: 3, Reason: "r"}))

	if f := family(t, m, "elasticjob_running_tasks"); f != nil {
		t.Fatalf("a standby exports the registry's state: %v", f)
	}
	m.Leading(true)
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"elasticjob_running_tasks", "job=busy,namespace=default", 3}, {"elasticjob_running_tasks", "job=flaky,namespace=default", 1},
		{"elasticjob_running_cpus", "job=busy,namespace=default", 1.5}, {"elasticjob_running_memory_mb", "job=busy,namespace=default", 192},
		{"elasticjob_ready_queue_executions", "", 5}, {"elasticjob_failover_queue_tasks", "", 3},
		{"elasticjob_queue_oldest_seconds", "queue=ready", 30}, {"elasticjob_queue_oldest_seconds", "queue=failover", 20},
		{"elasticjob_jobs_paused", "", 1},
	} {
		if got, ok := gauge(t, m, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s{%s} = %v (exported %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	clk.Advance(2 * time.Minute) // idle's fire and shard 2's backoff are due now
	if got, _ := gauge(t, m, "elasticjob_queue_oldest_seconds", "queue=failover"); got != 140 {
		t.Errorf("oldest failover after 2 min = %v, want 140 (shard 0)", got)
	}
	if got, _ := gauge(t, m, "elasticjob_queue_oldest_seconds", "queue=ready"); got != 150 {
		t.Errorf("oldest ready after 2 min = %v, want 150", got)
	}
	if s := series(t, m, "elasticjob_state_read_errors_total", ""); s == nil || s.GetCounter().GetValue() != 0 {
		t.Errorf("read errors: %v", s)
	}
}

// Empty queues report an age of 0, not a missing series.
func TestStateOfAnEmptyRegistry(t *testing.T) {
	m, _, _ := stateRig(t)
	m.Leading(true)
	for _, q := range []string{"ready", "failover"} {
		if got, ok := gauge(t, m, "elasticjob_queue_oldest_seconds", "queue="+q); !ok || got != 0 {
			t.Errorf("oldest %s = %v (%v), want 0", q, got, ok)
		}
	}
	if f := family(t, m, "elasticjob_running_tasks"); f != nil {
		t.Errorf("running tasks exported with none running: %v", f)
	}
}

// A registry that cannot be read leaves the state out and counts the
// failure; the other metrics are still served.
func TestStateReadErrors(t *testing.T) {
	kv := memory.New()
	reg := registry.New(kv)
	m := New()
	m.ObserveRegistry(reg, clock.NewFake(t0))
	m.Leading(true)
	kv.Close()
	if f := family(t, m, "elasticjob_queue_oldest_seconds"); f != nil {
		t.Errorf("state exported from a closed registry: %v", f)
	}
	// One failure per scrape. A scrape gathers the counter concurrently
	// with the state it counts for, so it may or may not see its own
	// failure: after two scrapes, a third sees at least two.
	family(t, m, "elasticjob_queue_oldest_seconds")
	if s := series(t, m, "elasticjob_state_read_errors_total", ""); s == nil || s.GetCounter().GetValue() < 2 || s.GetCounter().GetValue() > 3 {
		t.Errorf("read errors = %v, want 2 or 3 after three scrapes", s)
	}
	if v, ok := gauge(t, m, "elasticjob_leader", ""); !ok || v != 1 {
		t.Errorf("leader = %v (%v)", v, ok)
	}
}

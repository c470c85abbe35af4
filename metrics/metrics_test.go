package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/observe"
)

func TestMetricsAreExposed(t *testing.T) {
	m := New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := observe.TaskEvent{Job: "j", Queued: t0, At: t0.Add(3 * time.Millisecond)}
	m.Launched(ev)
	m.StatusChanged(ev, engine.Status{State: "TASK_FINISHED"})
	m.StatusChanged(ev, engine.Status{State: "TASK_LOST"})
	m.StatusChanged(ev, engine.Status{State: "TASK_RUNNING"})
	m.StatusChanged(ev, engine.Status{State: "TASK_STAGING"}) // counts nothing
	m.StatusChanged(ev, engine.Status{State: "TASK_KILLED"})
	m.StatusChanged(ev, engine.Status{State: "TASK_KILLED"})
	m.Fired("j", t0, t0.Add(time.Millisecond))
	m.ReadyDepth(4)
	m.OffersSeen(2, 1)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`elasticjob_tasks_launched_total{job="j",namespace="default"} 1`,
		`elasticjob_tasks_ended_total{job="j",namespace="default",result="finished"} 1`,
		`elasticjob_tasks_ended_total{job="j",namespace="default",result="failed"} 1`,
		`elasticjob_tasks_ended_total{job="j",namespace="default",result="killed"} 2`,
		`elasticjob_ready_queue_jobs 4`,
		`elasticjob_offers_total{outcome="received"} 2`,
		`elasticjob_offers_total{outcome="declined"} 1`,
		`elasticjob_fire_lateness_seconds_bucket{le="0.001"} 1`,
		`elasticjob_ready_to_accept_seconds_bucket{le="0.002"} 0`,
		`elasticjob_ready_to_accept_seconds_bucket{le="0.003"} 1`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// A series appears once it has something to say: j was never
	// relaunched and no run of it set a duration.
	for _, absent := range []string{`elasticjob_tasks_relaunched_total{`, `elasticjob_last_run_duration_seconds{`} {
		if strings.Contains(string(body), absent) {
			t.Errorf("metrics have %q", absent)
		}
	}
}

// Two teams' jobs of one name are two series: each per-job series names
// the job as its namespace knows it, and the namespace.
func TestPerJobSeriesCarryTheNamespace(t *testing.T) {
	m := New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, job := range []string{"nightly", "pay~nightly", "pay~nightly"} {
		m.Launched(observe.TaskEvent{Job: job, Queued: t0, At: t0})
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`elasticjob_tasks_launched_total{job="nightly",namespace="default"} 1`,
		`elasticjob_tasks_launched_total{job="nightly",namespace="pay"} 2`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

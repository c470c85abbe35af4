package metrics

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/observe"
)

// A cron fire's lateness to its launch is observed once per execution, in
// its job's namespace; a trigger's launch and the execution's further
// shards add nothing.
func TestFireLatenessPerNamespace(t *testing.T) {
	m := New()
	// search's fire at t0, committed 1 ms later, launched 40 ms after it
	// (two shards).
	m.Fired("search~index", t0, t0.Add(ms(1)))
	for i, task := range []string{"a", "b"} {
		m.Launched(observe.TaskEvent{TaskID: task, Job: "search~index", Item: i, Queued: t0.Add(ms(1)), At: t0.Add(ms(40))})
	}
	// pay's fire waits 12 s; its trigger is not a fire.
	m.Fired("pay~nightly", t0, t0.Add(ms(1)))
	m.Launched(observe.TaskEvent{TaskID: "c", Job: "pay~nightly", Queued: t0.Add(ms(1)), At: t0.Add(12 * time.Second)})
	m.TriggerCommitted("pay~adhoc", t0, t0.Add(ms(1)))
	m.Launched(observe.TaskEvent{TaskID: "d", Job: "pay~adhoc", Queued: t0.Add(ms(1)), At: t0.Add(ms(5))})
	// the default namespace's job: its bare name.
	m.Fired("plain", t0, t0)
	m.Launched(observe.TaskEvent{TaskID: "e", Job: "plain", Queued: t0, At: t0.Add(ms(2))})
	for _, c := range []struct {
		ns    string
		count uint64
		sum   float64
	}{{"search", 1, 0.04}, {"pay", 1, 12}, {"default", 1, 0.002}} {
		s := series(t, m, "elasticjob_namespace_fire_lateness_seconds", "namespace="+c.ns)
		if s == nil {
			t.Fatalf("no fire lateness series for namespace %s", c.ns)
		}
		h := s.GetHistogram()
		if h.GetSampleCount() != c.count || h.GetSampleSum() < c.sum-1e-9 || h.GetSampleSum() > c.sum+1e-9 {
			t.Errorf("namespace %s: %d fires, %v s; want %d, %v s", c.ns, h.GetSampleCount(), h.GetSampleSum(), c.count, c.sum)
		}
	}
	// The same fires count toward each namespace's on-time rate (the
	// console's namespace page): search's and default's on time, pay's late.
	for _, c := range []struct {
		ns            string
		fires, onTime int
	}{{"search", 1, 1}, {"pay", 1, 0}, {"default", 1, 1}} {
		if got := m.NamespaceSeries().Snapshot(c.ns); got.Fires != c.fires || got.OnTime != c.onTime {
			t.Errorf("namespace %s: %d fires, %d on time; want %d, %d", c.ns, got.Fires, got.OnTime, c.fires, c.onTime)
		}
	}
}

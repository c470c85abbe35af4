package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/observe"
)

// runningData is an executor's TASK_RUNNING report with the given times
// (zero: left out).
func runningData(launch, fork, start time.Time) []byte {
	f := func(k string, t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return fmt.Sprintf(`,%q:%q`, k, t.Format(time.RFC3339Nano))
	}
	return []byte(`{"hostname":"h","ip":"127.0.0.1"` + f("launchTime", launch) + f("forkTime", fork) + f("startTime", start) + `}`)
}

func running(m *Metrics, ev observe.TaskEvent, at time.Time, data []byte) {
	ev.At = at
	m.StatusChanged(ev, engine.Status{TaskID: ev.TaskID, State: "TASK_RUNNING", Data: data})
}

// A trigger's launch is split into its seven stages, each from the end of
// the one before.
func TestStagesOfATriggeredLaunch(t *testing.T) {
	m := New()
	m.TriggerCommitted("j", t0, t0.Add(ms(2)))
	ev := observe.TaskEvent{TaskID: "t1", Job: "j", Transient: true, Queued: t0.Add(ms(2.5)), At: t0.Add(ms(3.5))}
	m.Launched(ev)
	running(m, ev, t0.Add(ms(7)), runningData(t0.Add(ms(4)), t0.Add(ms(5)), t0.Add(ms(6))))
	wantStages(t, m, map[string]string{"commit": "1/2", "seen": "1/0.5", "accept": "1/1", "agent": "1/0.5",
		"executor": "1/1", "fork": "1/1", "running": "1/1"})
	// A repeated RUNNING (an agent's retry) is not counted again.
	running(m, ev, t0.Add(ms(9)), runningData(t0.Add(ms(4)), t0.Add(ms(5)), t0.Add(ms(6))))
	if n, _ := stage(t, m, "running"); n != 1 {
		t.Errorf("a repeated TASK_RUNNING was observed again: %d", n)
	}
}

// A launch round the API's wake-up ran before the store's watch told of
// the entry: the leader saw it when it was committed (seen 0).
func TestStagesBeforeTheWatch(t *testing.T) {
	m := New()
	m.TriggerCommitted("j", t0, t0.Add(ms(2)))
	m.Launched(observe.TaskEvent{TaskID: "t1", Job: "j", Queued: t0, At: t0.Add(ms(3))})
	wantStages(t, m, map[string]string{"commit": "1/2", "seen": "1/0", "accept": "1/1"})
}

// The shards of one execution share its commit and sighting: seen is
// observed once, accept for each task; the next execution takes the next
// commit.
func TestStagesOfShardsAndOfTheNextExecution(t *testing.T) {
	m := New()
	m.TriggerCommitted("j", t0, t0.Add(ms(1)))
	m.TriggerCommitted("j", t0.Add(ms(1)), t0.Add(ms(2))) // queued behind the first: the next launch is the first's
	for i, at := range []float64{3, 4} {
		m.Launched(observe.TaskEvent{TaskID: fmt.Sprint("a", i), Job: "j", Queued: t0.Add(ms(1.5)), At: t0.Add(ms(at))})
	}
	wantStages(t, m, map[string]string{"commit": "2/2", "seen": "1/0.5", "accept": "2/4"})
	m.TriggerCommitted("j", t0.Add(ms(10)), t0.Add(ms(11)))
	m.Launched(observe.TaskEvent{TaskID: "b", Job: "j", Queued: t0.Add(ms(11.25)), At: t0.Add(ms(12))})
	wantStages(t, m, map[string]string{"commit": "3/3", "seen": "2/0.75", "accept": "3/4.75"})
}

// A cron fire staged ahead of its instant counts from the instant; a
// failover launch has no commit or seen stage.
func TestStagesOfFiresAndFailovers(t *testing.T) {
	m := New()
	instant := t0.Add(time.Second)
	m.Fired("cron", instant, instant) // committed ahead: launchable at the instant
	m.Launched(observe.TaskEvent{TaskID: "c", Job: "cron", Queued: instant, At: instant.Add(ms(1))})
	m.Launched(observe.TaskEvent{TaskID: "f", Job: "other", Source: "FAILOVER", Queued: t0, At: t0.Add(ms(5))})
	wantStages(t, m, map[string]string{"seen": "1/0", "accept": "2/6"})
}

// Clock offsets between the scheduler and an agent can make a span
// negative: it is dropped. A job that is not a forked process (HTTP) has
// no executor or fork stage; a task another leader launched has none of
// the later stages.
func TestStagesSkipWhatIsNotKnown(t *testing.T) {
	m := New()
	ev := observe.TaskEvent{TaskID: "skew", Job: "j", Queued: t0, At: t0.Add(ms(10))}
	m.Launched(ev)
	running(m, ev, t0.Add(ms(20)), runningData(t0.Add(ms(9)), t0.Add(ms(11)), t0.Add(ms(12))))
	http := observe.TaskEvent{TaskID: "http", Job: "h", Queued: t0, At: t0.Add(ms(1))}
	m.Launched(http)
	running(m, http, t0.Add(ms(5)), runningData(t0.Add(ms(2)), time.Time{}, t0.Add(ms(3))))
	running(m, observe.TaskEvent{TaskID: "foreign", Job: "j"}, t0.Add(ms(5)), runningData(t0, t0, t0))
	m.Launched(observe.TaskEvent{TaskID: "junk", Job: "k", Queued: t0, At: t0.Add(ms(1))})
	running(m, observe.TaskEvent{TaskID: "junk", Job: "k"}, t0.Add(ms(5)), []byte("not json"))
	wantStages(t, m, map[string]string{"accept": "3/12", "agent": "1/1", "executor": "1/2", "fork": "1/1", "running": "2/10"})
}

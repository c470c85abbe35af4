package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
)

// A backfill's run is handed its instant, on its first launch and on a
// failover retry (a job backfill's from its key, a workflow node's from
// the failed task); other runs get none.
func TestScheduledOf(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 10, 0, 0, time.UTC)
	key := registry.BackfillRunKey("pay", "bf-20260303T090000-0001", at)
	cases := []struct {
		name string
		pl   round.Launch
		want string
	}{
		{"backfill run", round.Launch{Ready: &queue.Ready{Count: 1, Runs: []queue.PendingRun{{IdempotencyKey: key, ScheduledAt: at}}}}, "2026-03-02T09:10:00Z"},
		{"its failover retry", round.Launch{Failover: &queue.Failover{RunKey: key}}, "2026-03-02T09:10:00Z"},
		{"a cron fire", round.Launch{Ready: &queue.Ready{Count: 1}}, ""},
		{"a keyed trigger", round.Launch{Ready: &queue.Ready{Count: 1, Runs: []queue.PendingRun{{IdempotencyKey: "nightly-7"}}}}, ""},
		{"a trigger's failover", round.Launch{Failover: &queue.Failover{RunKey: "nightly-7"}}, ""},
		{"a workflow backfill run's node", round.Launch{Ready: &queue.Ready{Count: 1, Runs: []queue.PendingRun{{IdempotencyKey: "pay.wf-0123", ScheduledAt: at}}}}, "2026-03-02T09:10:00Z"},
		{"its retry (the failed task's instant)", round.Launch{Failover: &queue.Failover{RunKey: "pay.wf-0123", ScheduledAt: at}}, "2026-03-02T09:10:00Z"},
	}
	for _, c := range cases {
		if got := scheduledOf(c.pl); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		// A backfill's run serves its instant as a cron fire serves its
		// own: history's nominalAt and ELASTICJOB_NOMINAL_AT carry it.
		if got := nominalOf(c.pl); c.want != "" && got.Format(time.RFC3339) != c.want || c.want == "" && !got.IsZero() {
			t.Errorf("%s: nominal %v, want %q", c.name, got, c.want)
		}
	}
}

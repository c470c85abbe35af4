package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
)

// Issue 42: while one job holds the only machine, the job waiting behind
// it says so — the holder, what it holds, when it is expected to free it
// (the p90 of its recent runs, from history at first) — and the reason no
// longer flips to no_offers whenever the offer is declined and filtered.
func TestWaitNamesTheHolderAndHolds(t *testing.T) {
	r := newRig(t)
	seeded := 0
	r.rebuild(func(d *Deps) {
		d.RecentRuns = func(_ context.Context, job string) ([]time.Duration, error) {
			seeded++
			if job != "pay_settle" {
				return nil, nil
			}
			return []time.Duration{8 * time.Second, 7 * time.Second, 8 * time.Second, 6 * time.Second}, nil
		}
	})
	r.agent(2, 4096)
	r.addApp("app", 0.05, 32)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "pay_settle", 1, 1.9 })
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount = "report", 1, 1 })
	r.trigger("pay_settle")
	r.offer("o1", 2, 4096)
	r.sched.launcher.round(r.ctx)
	pay := r.running("pay_settle")[0]
	if pay.TaskID == "" {
		t.Fatal("pay_settle did not launch")
	}
	r.trigger("report")
	var reasons []string
	for i := range 6 {
		if i%2 == 0 {
			r.offer("o"+string(rune('2'+i)), 0.05, 4000) // what is left, offered again
		} // else: declined by the last round, filtered: no offer held
		r.clk.Advance(waitRecordEvery)
		r.sched.launcher.round(r.ctx)
		w := r.waiting()["ready/report"]
		reasons = append(reasons, w.Reason)
		if w.Reason == "" {
			continue // not recorded yet
		}
		if w.Reason != queue.WaitReserved || len(w.Holders) != 1 {
			t.Fatalf("round %d: %+v", i, w)
		}
		h := w.Holders[0]
		if h.Job != "pay_settle" || h.TaskID != pay.TaskID || h.Holds.CPUs != 1.9 || !h.ExpectedEnd.Equal(pay.LaunchedAt.Add(8*time.Second)) || h.Basis != "p90" {
			t.Fatalf("round %d: holder %+v", i, h)
		}
		if !strings.Contains(w.Message, "held by job pay_settle (1 shard, 1.9 CPUs and 64 MB) until it ends, expected by") {
			t.Fatalf("round %d: message %q", i, w.Message)
		}
		sum := round.Summary(w, pay.LaunchedAt.Add(5*time.Second))
		if want := "waits for 1 CPU and 64 MB; job pay_settle holds 1.9 CPUs and 64 MB until it ends (running 5s of its usual 8s)"; sum != want {
			t.Fatalf("summary %q, want %q", sum, want)
		}
	}
	for i, reason := range reasons[1:] {
		if reason != queue.WaitReserved {
			t.Fatalf("the reason flipped: %v (round %d)", reasons, i+1)
		}
	}
	if seeded != 1 {
		t.Errorf("history read %d times for the one running job, want once", seeded)
	}
}

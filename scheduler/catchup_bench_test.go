package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// BenchmarkCatchUp100k: a takeover's catch-up at 100,000 jobs (the
// simulated cluster's: job i fires at second i%60, misfire=false), the
// last leader's fires committed up to 2 s before now, on the in-memory
// store: counting every job's missed fires (plan-ms/op), then queuing
// them in batches of 500 (commit-ms/op). Each iteration moves on by 10 s,
// so it catches up other jobs.
func BenchmarkCatchUp100k(b *testing.B) {
	r := newRig(b)
	r.addApp("app", 0.1, 64)
	for i := range 100_000 {
		j := jobs.Default()
		j.JobName, j.AppName, j.Cron = fmt.Sprintf("sim-%06d", i), "app", fmt.Sprintf("%d * * * * ?", i%60)
		j.ShardingTotalCount, j.CPUCount, j.MemoryMB = 1+i%10, 0.1, 64
		if err := r.reg.Config().AddJobAt(r.ctx, j, t0.Add(-time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
	r.reload()
	p := r.sched.producer
	p.init()
	var plan, commit time.Duration
	jobsN := 0
	now := t0
	for b.Loop() {
		b.StopTimer()
		now = now.Add(10 * time.Second)
		if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{}, now.Add(-2*time.Second), now.Add(-2*time.Second), nil); err != nil {
			b.Fatal(err)
		}
		r.clk.Set(now)
		b.StartTimer()
		c0 := time.Now()
		_, pl, err := p.planCatchUp(r.ctx)
		if err != nil || pl == nil {
			b.Fatal(err, pl)
		}
		c1 := time.Now()
		if err := p.dispatcher().TriggerMissed(r.ctx, pl.missed, pl.now, pl.id); err != nil {
			b.Fatal(err)
		}
		plan, commit, jobsN = plan+c1.Sub(c0), commit+time.Since(c1), jobsN+len(pl.missed)
	}
	b.ReportMetric(float64(plan.Milliseconds())/float64(b.N), "plan-ms/op")
	b.ReportMetric(float64(commit.Milliseconds())/float64(b.N), "commit-ms/op")
	b.ReportMetric(float64(jobsN)/float64(b.N), "jobs/op")
}

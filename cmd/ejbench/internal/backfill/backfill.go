package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// Backfill scenario: mesos-local's simulated agents (tasks that run no
// process), liveJobs jobs firing every minute spread over its seconds
// (the live fires whose lateness is watched), and bfJobs jobs whose
// crons fire only in 2025, each backfilled over bfInstants minutes of it.
const (
	bfLiveJobs = 600 // 10 fires/s
	bfJobs     = 100
	bfInstants = 100 // per job: 10,000 in all
	bfWindow   = 60 * time.Second
	bfBound    = 20 * time.Minute
)

// Run measures a backfill of 10,000 instants (runs/s) and the live
// fires' lateness beside it, against the same fires without it.
func Run(ctx context.Context, env bench.Env, r *bench.Report) error {
	return run(ctx, options{env}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	const sc = "backfill"
	dir, cleanup, err := bench.TempDir(o.Env, "backfill")
	if err != nil {
		return err
	}
	defer cleanup()
	ml, err := bench.StartMesosLocal(o.BinDir, dir, "--sim-agents", "20", "--sim-agent-cpus", "64", "--sim-agent-mem-mb", "262144",
		"--sim-task-duration", "100ms", "--sim-fail-ratio", "0")
	if err != nil {
		return err
	}
	defer ml.Stop()
	schedDir := filepath.Join(dir, "sched")
	if err := os.MkdirAll(schedDir, 0o750); err != nil {
		return err
	}
	p, err := bench.StartScheduler(o.BinDir, schedDir, "--mesos-url", ml.URL, "--allow-file-app-urls=true")
	if err != nil {
		return err
	}
	defer p.Stop()
	if _, err := p.WaitHealthy(60 * time.Second); err != nil {
		return err
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m, err := p.API.Scrape(); err == nil && m.Sum("elasticjob_leader") == 1 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the scheduler did not become leader within 60 s; log tail:\n%s", bench.Tail(p.LogPath, 2000))
		}
	}
	if err := p.API.PostJSON("/api/app", `{"appName":"bf_app","appURL":"file:///bin/true","bootstrapScript":"true","cpuCount":0.1,"memoryMB":64,"appCacheEnable":true}`); err != nil {
		return err
	}
	for i := range bfLiveJobs {
		body := fmt.Sprintf(`{"jobName":"live-%04d","appName":"bf_app","jobExecutionType":"TRANSIENT","cron":"%d * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":64}`, i, i%60)
		if err := p.API.PostJSON("/api/job/register", body); err != nil {
			return err
		}
	}
	for i := range bfJobs {
		body := fmt.Sprintf(`{"jobName":"bf-%03d","appName":"bf_app","jobExecutionType":"TRANSIENT","cron":"0 * * * * ? 2025,2099","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":64}`, i)
		if err := p.API.PostJSON("/api/job/register", body); err != nil {
			return err
		}
	}
	bench.Logf("%s: %d live jobs (10 fires/s), %d jobs to backfill; warming up", sc, bfLiveJobs, bfJobs)
	if !waitFor(ctx, 10*time.Second) {
		return ctx.Err()
	}

	// A: the live fires alone.
	m0, _ := p.API.Scrape()
	if !waitFor(ctx, bfWindow) {
		return ctx.Err()
	}
	m1, _ := p.API.Scrape()
	base := m1.Histogram("elasticjob_fire_lateness_seconds").Minus(m0.Histogram("elasticjob_fire_lateness_seconds"))
	baseAcc := m1.Histogram("elasticjob_ready_to_accept_seconds").Minus(m0.Histogram("elasticjob_ready_to_accept_seconds"))

	// B: the same fires while 10,000 instants are backfilled.
	m0, _ = p.API.Scrape()
	from := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	var ids []string
	for i := range bfJobs {
		body := fmt.Sprintf(`{"jobName":"bf-%03d","from":%q,"to":%q,"concurrency":1}`, i, from.Format(time.RFC3339), from.Add(bfInstants*time.Minute).Format(time.RFC3339))
		code, b, err := p.API.Do(http.MethodPost, "/api/job/backfills", "application/json", []byte(body))
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("start backfill %d: %d %s %v", i, code, b, err)
		}
		var v struct{ ID string }
		_ = json.Unmarshal(b, &v)
		ids = append(ids, v.ID)
	}
	type row struct {
		State    string
		Progress struct{ Done, Failed, Total int }
	}
	var done, failed, total int
	for {
		if !waitFor(ctx, time.Second) {
			return ctx.Err()
		}
		code, b, err := p.API.Do(http.MethodGet, "/api/job/backfills", "", nil)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("list backfills: %d %v", code, err)
		}
		var rows []row
		if err := json.Unmarshal(b, &rows); err != nil {
			return err
		}
		all := true
		done, failed, total = 0, 0, 0
		for _, x := range rows {
			done, failed, total = done+x.Progress.Done, failed+x.Progress.Failed, total+x.Progress.Total
			all = all && x.State == "DONE"
		}
		if all || time.Since(start) > bfBound {
			break
		}
	}
	took := time.Since(start)
	m1, _ = p.API.Scrape()
	with := m1.Histogram("elasticjob_fire_lateness_seconds").Minus(m0.Histogram("elasticjob_fire_lateness_seconds"))
	withAcc := m1.Histogram("elasticjob_ready_to_accept_seconds").Minus(m0.Histogram("elasticjob_ready_to_accept_seconds"))

	r.Add(sc, fmt.Sprintf("backfill of %d instants (%d jobs × %d, concurrency 1; simulated 100 ms tasks): runs ended, failed; time; runs/s", total, bfJobs, bfInstants),
		fmt.Sprintf("%d, %d; %.1f s; %.1f runs/s", done, failed, took.Seconds(), float64(done)/took.Seconds()), "", nil)
	p99a, _ := base.Quantile(.99)
	p99b, ub := with.Quantile(.99)
	r.Add(sc, fmt.Sprintf("live fire lateness p99 (%d live jobs, 10 fires/s): alone (%.0f fires) → during the backfill (%.0f fires)", bfLiveJobs, base.Count, with.Count),
		bench.Ms(p99a)+" → "+bench.Ms(p99b)+" (bucket ≤ "+bench.Ms(ub)+")", "≤ 10 ms", bench.Le(p99b, 0.010))
	acc50a, _ := baseAcc.Quantile(.5)
	acc99a, _ := baseAcc.Quantile(.99)
	acc50b, _ := withAcc.Quantile(.5)
	acc99b, _ := withAcc.Quantile(.99)
	r.Add(sc, "queue → ACCEPT p50 / p99 (every launch: live alone → live and backfill runs)",
		bench.Ms(acc50a)+" / "+bench.Ms(acc99a)+" → "+bench.Ms(acc50b)+" / "+bench.Ms(acc99b), "", nil)
	_ = ids
	return nil
}

// waitFor sleeps d unless ctx ends first (false).
func waitFor(ctx context.Context, d time.Duration) bool { return bench.SleepCtx(ctx, d) == nil }

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
}

package ha

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// Run measures cluster mode on this machine (three schedulers, one
// mesos-local, a 3-server ZooKeeper ensemble): kill -9 of the leader →
// first task launched by the new leader, at a 2 s and at the default 15 s
// session timeout; the latency a standby adds to a write it forwards; and
// job registrations on the ZooKeeper registry through the API.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	if o.haKillsEtcd > 0 {
		if err := haEtcd(ctx, o, r); err != nil {
			return err
		}
	}
	if o.haKills > 0 {
		if err := haCluster2s(ctx, o, r); err != nil {
			return err
		}
	}
	if o.haKillsSlow == 0 && o.haWrites == 0 && o.haJobs == 0 {
		return nil
	}
	return haClusterDefault(ctx, o, r)
}

// haEtcd is the etcd shape's takeovers: three schedulers, each with an
// etcd member of its own, and mesos-local.
func haEtcd(ctx context.Context, o options, r *bench.Report) error {
	return withHAShape(ctx, o, "ha-etcd", func(dir string) (*haCluster, error) {
		bench.Logf("ha: cluster on etcd (a member in each scheduler), lease %s", etcdLeaseTTL)
		return startHAEtcd(o, dir, 3)
	}, func(c *haCluster, starts string) error {
		if err := haTakeovers(ctx, c, r, starts, o.haKillsEtcd); err != nil {
			return err
		}
		if o.haBurn <= 0 {
			return nil
		}
		return haBurn(ctx, c, r, o.haBurn)
	})
}

// haBurn runs two CPU burners per core beside the etcd shape for d and
// counts the elections the schedulers log meanwhile (0 is the goal: the
// timers cause no spurious election on a loaded machine).
func haBurn(ctx context.Context, c *haCluster, r *bench.Report, d time.Duration) error {
	elections := func() int {
		n := 0
		for _, p := range c.scheds {
			if b, err := os.ReadFile(p.LogPath); err == nil {
				n += strings.Count(string(b), `msg="elected leader"`)
			}
		}
		return n
	}
	before, load0 := elections(), bench.Loadavg()
	var stop atomic.Bool
	var wg sync.WaitGroup
	burners := 2 * runtime.NumCPU()
	for range burners {
		wg.Go(func() {
			x := 0
			for !stop.Load() {
				for i := range 1 << 16 {
					x += i
				}
			}
			_ = x
		})
	}
	err := bench.SleepCtx(ctx, d)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		return err
	}
	n := elections() - before
	bench.Logf("ha: %d elections in %s beside %d CPU burners (load average %s before, %s after)", n, d, burners, load0, bench.Loadavg())
	r.Add("ha/etcd", fmt.Sprintf("elections in %s beside %d CPU burners (load average before: %s)", d, burners, load0),
		fmt.Sprint(n), "0", bench.Le(float64(n), 0))
	return nil
}

func haCluster2s(ctx context.Context, o options, r *bench.Report) error {
	return withHACluster(ctx, o, 2*time.Second, func(c *haCluster, starts string) error {
		return haTakeovers(ctx, c, r, starts, o.haKills)
	})
}

func haClusterDefault(ctx context.Context, o options, r *bench.Report) error {
	return withHACluster(ctx, o, 15*time.Second, func(c *haCluster, starts string) error {
		if err := haTakeovers(ctx, c, r, starts, o.haKillsSlow); err != nil {
			return err
		}
		if o.haWrites > 0 {
			if err := haForwarding(ctx, c, r, o.haWrites); err != nil {
				return err
			}
		}
		if o.haJobs == 0 {
			return nil
		}
		return haRegistrations(ctx, c, r, o.haJobs, o.Workers)
	})
}

// withHACluster runs fn on a fresh cluster with a job firing every second
// whose script records each process start (ns) in the file it is given.
func withHACluster(ctx context.Context, o options, session time.Duration, fn func(*haCluster, string) error) error {
	return withHAShape(ctx, o, fmt.Sprintf("ha-%s", session), func(dir string) (*haCluster, error) {
		bench.Logf("ha: cluster with zk_session_timeout %s", session)
		return startHACluster(ctx, o, dir, session, 3)
	}, fn)
}

// withHAShape runs fn on the cluster start makes in a fresh directory.
func withHAShape(ctx context.Context, o options, name string, start func(dir string) (*haCluster, error), fn func(*haCluster, string) error) error {
	dir, cleanup, err := bench.TempDir(o.Env, name)
	if err != nil {
		return err
	}
	defer cleanup()
	c, err := start(dir)
	defer c.close()
	if err != nil {
		return err
	}
	l, err := c.leader(-1, time.Minute)
	if err != nil {
		return err
	}
	work := filepath.Join(dir, "app")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	script, starts, err := bench.WriteStartScript(work)
	if err != nil {
		return err
	}
	api := c.scheds[l].API
	if err := api.PostJSON("/api/app", fmt.Sprintf(`{"appName":"ha_app","appURL":"file://%s","bootstrapScript":"start.sh","cpuCount":0.1,"memoryMB":32,"appCacheEnable":true}`, script)); err != nil {
		return err
	}
	if err := api.PostJSON("/api/job/register", `{"jobName":"tick","appName":"ha_app","jobExecutionType":"TRANSIENT","cron":"* * * * * ?","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`); err != nil {
		return err
	}
	if _, err := bench.WaitStarts(ctx, starts, 1, time.Time{}, time.Minute); err != nil {
		return fmt.Errorf("the every-second job never ran: %w", err)
	}
	return fn(c, starts)
}

// haTakeovers kills the leader n times: kill → a standby reports itself
// the leader, and kill → the first task process started (the fires missed
// meanwhile are queued by the new leader and launched as soon as it has
// reconciled). The killed instance is restarted as a standby each time.
func haTakeovers(ctx context.Context, c *haCluster, r *bench.Report, starts string, n int) error {
	var elected, launched []float64
	for i := 0; i < n && ctx.Err() == nil; i++ {
		l, err := c.leader(-1, time.Minute)
		if err != nil {
			return err
		}
		if _, err := bench.WaitStarts(ctx, starts, 2, time.Now(), time.Minute); err != nil { // steady: the leader launches
			return err
		}
		dead := c.kill9(l)
		if _, err := c.leader(l, c.session+time.Minute); err != nil {
			return err
		}
		elected = append(elected, time.Since(dead).Seconds())
		first, err := bench.WaitStarts(ctx, starts, 1, dead, c.session+time.Minute)
		if err != nil {
			return err
		}
		launched = append(launched, first.Sub(dead).Seconds())
		bench.Logf("ha: takeover %d (session %s): new leader after %s, first launch after %s", i+1, c.session,
			bench.Ms(elected[i]), bench.Ms(launched[i]))
		if _, err := c.add(l); err != nil { // back as a standby
			return err
		}
	}
	sc, goal := fmt.Sprintf("ha/%s", c.session), c.session+time.Second
	if c.etcd != nil {
		sc, goal = "ha/etcd", 2*time.Second
	}
	r.Add(sc, fmt.Sprintf("kill -9 of the leader → a standby leads (p50 / p99 / max of %d)", len(elected)),
		bench.Ms(promtext.Percentile(elected, .5))+" / "+bench.Ms(promtext.Percentile(elected, .99))+" / "+bench.Ms(promtext.Max(elected)), "", nil)
	r.Add(sc, fmt.Sprintf("kill -9 of the leader → first task launched by the new leader (p50 / p99 / max of %d)", len(launched)),
		bench.Ms(promtext.Percentile(launched, .5))+" / "+bench.Ms(promtext.Percentile(launched, .99))+" / "+bench.Ms(promtext.Max(launched)), fmt.Sprintf("≤ %s", goal), bench.Le(promtext.Percentile(launched, .99), goal.Seconds()))
	return nil
}

// haForwarding sends n small writes (a job's description) alternately to
// the leader and to a standby, one at a time.
func haForwarding(ctx context.Context, c *haCluster, r *bench.Report, n int) error {
	l, err := c.leader(-1, time.Minute)
	if err != nil {
		return err
	}
	s := (l + 1) % len(c.scheds)
	if err := c.scheds[l].API.PostJSON("/api/job/register", `{"jobName":"fw_job","appName":"ha_app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`); err != nil {
		return err
	}
	var lat [2][]float64
	for i := 0; i < 2*n && ctx.Err() == nil; i++ {
		api := c.scheds[l].API
		if i%2 == 1 {
			api = c.scheds[s].API
		}
		body := []byte(fmt.Sprintf(`{"jobName":"fw_job","description":"write %d"}`, i))
		t := time.Now()
		code, b, err := api.Do(http.MethodPut, "/api/job/update", "application/json", body)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("update through %d: %d %s %v", i%2, code, b, err)
		}
		lat[i%2] = append(lat[i%2], time.Since(t).Seconds())
	}
	sc := "ha/forward"
	r.Add(sc, fmt.Sprintf("job update on the leader p50 / p99 (%d)", len(lat[0])), bench.Ms(promtext.Percentile(lat[0], .5))+" / "+bench.Ms(promtext.Percentile(lat[0], .99)), "", nil)
	r.Add(sc, fmt.Sprintf("job update on a standby (forwarded) p50 / p99 (%d)", len(lat[1])), bench.Ms(promtext.Percentile(lat[1], .5))+" / "+bench.Ms(promtext.Percentile(lat[1], .99)), "", nil)
	r.Add(sc, "added by forwarding (standby − leader) p50 / p99", msDiff(promtext.Percentile(lat[1], .5)-promtext.Percentile(lat[0], .5))+" / "+
		msDiff(promtext.Percentile(lat[1], .99)-promtext.Percentile(lat[0], .99)), "", nil)
	return nil
}

// msDiff formats a difference of seconds as signed milliseconds.
func msDiff(sec float64) string { return fmt.Sprintf("%+.2f ms", sec*1000) }

// haRegistrations registers n jobs (no cron) with `workers` keep-alive
// clients, on the leader, then n more on a standby.
func haRegistrations(ctx context.Context, c *haCluster, r *bench.Report, n, workers int) error {
	l, err := c.leader(-1, time.Minute)
	if err != nil {
		return err
	}
	for _, via := range []struct {
		name string
		i    int
	}{{"the leader", l}, {"a standby", (l + 1) % len(c.scheds)}} {
		rate, p50, p99, errs, err := registerMany(ctx, c.scheds[via.i].API, fmt.Sprintf("reg%d", via.i), n, workers)
		if err != nil {
			return err
		}
		sc := "ha/register"
		target, met := "", (*bool)(nil)
		if via.i == l {
			target, met = "≥ 2000 jobs/s", bench.Ge(rate, 2000)
		}
		r.Add(sc, fmt.Sprintf("%d registrations through %s (%d clients)", n, via.name, workers), fmt.Sprintf("%.0f jobs/s, %d errors", rate, errs), target, met)
		r.Add(sc, fmt.Sprintf("request latency through %s p50 / p99", via.name), bench.Ms(p50)+" / "+bench.Ms(p99), "", nil)
	}
	return nil
}

func registerMany(ctx context.Context, api *bench.Client, prefix string, n, workers int) (rate, p50, p99 float64, errs int64, err error) {
	var next, failures atomic.Int64
	var firstErr error
	var once sync.Once
	lat := make([][]float64, workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && failures.Load() < 100 {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				s := time.Now()
				err := api.PostJSON("/api/job/register", fmt.Sprintf(`{"jobName":"%s-%05d","appName":"ha_app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8}`, prefix, i))
				lat[w] = append(lat[w], time.Since(s).Seconds())
				if err != nil {
					failures.Add(1)
					once.Do(func() { firstErr = err })
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0).Seconds()
	var all []float64
	for _, l := range lat {
		all = append(all, l...)
	}
	if failures.Load() >= 100 {
		return 0, 0, 0, failures.Load(), fmt.Errorf("registration aborted after 100 errors: %w", firstErr)
	}
	ok := int64(len(all)) - failures.Load()
	return float64(ok) / elapsed, promtext.Percentile(all, .5), promtext.Percentile(all, .99), failures.Load(), nil
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}

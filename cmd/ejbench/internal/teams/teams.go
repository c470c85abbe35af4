package teams

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// The teams scenario: namespaces with guarantees, limits and
// weights on the embedded engine of a 2-CPU agent, with real executors and
// processes. Every job runs one script that appends its own clock at
// process start (and at its end) to a file, so a fire's lateness is read
// from the job's clock: the fire instant → the start of the first run at or
// after it (a fire folded into a later run is late until that run starts).

// teamScript is the one script every app runs: start line, a sleep of the
// job parameter's seconds, end line.
const teamScript = `#!/bin/sh
echo "$(date +%%s%%N) $ELASTICJOB_NAMESPACE $ELASTICJOB_JOB_NAME start" >> %[1]s
[ -n "$ELASTICJOB_JOB_PARAMETER" ] && sleep "$ELASTICJOB_JOB_PARAMETER"
echo "$(date +%%s%%N) $ELASTICJOB_NAMESPACE $ELASTICJOB_JOB_NAME end" >> %[1]s
`

// teamEvent is one line the script wrote.
type teamEvent struct {
	at       time.Time
	ns, job  string
	start    bool
	parseErr error
}

func readTeamEvents(path string) []teamEvent {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []teamEvent
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, teamEvent{at: time.Unix(0, ns), ns: f[1], job: f[2], start: f[3] == "start"})
	}
	slices.SortFunc(out, func(a, b teamEvent) int { return a.at.Compare(b.at) })
	return out
}

// fireLateness is each fire's lateness: its instant → the first start of
// job at or after it (+Inf when none started by the end of events).
func fireLateness(events []teamEvent, ns, job string, fires []time.Time) []float64 {
	var starts []time.Time
	for _, e := range events {
		if e.start && e.ns == ns && e.job == job {
			starts = append(starts, e.at)
		}
	}
	out := make([]float64, 0, len(fires))
	for _, f := range fires {
		i, _ := slices.BinarySearchFunc(starts, f, func(a, b time.Time) int { return a.Compare(b) })
		if i == len(starts) {
			out = append(out, math.Inf(1))
			continue
		}
		out = append(out, starts[i].Sub(f).Seconds())
	}
	return out
}

// cpuSeconds is what each namespace's runs held between from and to, by
// their own clocks (start → end; a run still going counts up to to), at
// cpu[ns] CPUs each.
func cpuSeconds(events []teamEvent, cpu map[string]float64, from, to time.Time) map[string]float64 {
	open := map[string][]time.Time{} // ns/job → starts not yet ended
	out := map[string]float64{}
	add := func(ns string, a, b time.Time) {
		a, b = laterT(a, from), earlierT(b, to)
		if b.After(a) {
			out[ns] += b.Sub(a).Seconds() * cpu[ns]
		}
	}
	for _, e := range events {
		k := e.ns + "/" + e.job
		if e.start {
			open[k] = append(open[k], e.at)
			continue
		}
		if s := open[k]; len(s) > 0 {
			add(e.ns, s[0], e.at)
			open[k] = s[1:]
		}
	}
	for k, s := range open {
		for _, a := range s {
			add(k[:strings.IndexByte(k, '/')], a, to)
		}
	}
	return out
}

func laterT(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlierT(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// cronFires lists the instants of a fire every period strictly after from
// and at or before to.
func cronFires(period time.Duration, from, to time.Time) []time.Time {
	var out []time.Time
	for f := from.Truncate(period).Add(period); !f.After(to); f = f.Add(period) {
		out = append(out, f)
	}
	return out
}

// teamRig is one scheduler with the teams' apps, run from one bin dir.
type teamRig struct {
	p      *bench.Scheduler
	out    string // the script's file
	script string
}

func startTeamRig(ctx context.Context, o options, side, bin, scenario string) (*teamRig, func(), error) {
	dir, cleanup, err := bench.TempDir(o.Env, "teams-"+scenario+"-"+side)
	if err != nil {
		return nil, nil, err
	}
	work := filepath.Join(dir, "app")
	if err := os.MkdirAll(work, 0o755); err != nil {
		cleanup()
		return nil, nil, err
	}
	rig := &teamRig{out: filepath.Join(dir, "events"), script: filepath.Join(work, "team.sh")}
	if err := os.WriteFile(rig.script, []byte(fmt.Sprintf(teamScript, rig.out)), 0o755); err != nil {
		cleanup()
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "sched"), 0o750); err != nil {
		cleanup()
		return nil, nil, err
	}
	// A 2-CPU agent whatever the machine; tasks run as the harness's user
	// (they write the events file); executors exit 10 s after their last task.
	flags := []string{"--embedded-cpus", strconv.FormatFloat(o.teamsCPUs, 'f', -1, 64), "--embedded-mem-mb", "8192", "--tenant-isolation", "off"}
	rig.p, err = bench.StartScheduler(bin, filepath.Join(dir, "sched"), flags...)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	stop := func() {
		rig.p.Stop()
		bench.KillOwnExecutors(filepath.Join(bin, "executor"), rig.p.DataDir)
		cleanup()
	}
	if _, err := rig.p.WaitHealthy(30 * time.Second); err != nil {
		stop()
		return nil, nil, err
	}
	return rig, stop, nil
}

// ns creates a namespace with its capacity (body: the PUT's JSON, "" none).
func (g *teamRig) ns(name, body string) error {
	if body == "" {
		body = "{}"
	}
	code, b, err := g.p.API.Do(http.MethodPut, "/api/namespaces/"+name, "application/json", []byte(body))
	if err != nil {
		return err
	}
	if code/100 != 2 {
		return fmt.Errorf("PUT /api/namespaces/%s: %d %s", name, code, strings.TrimSpace(string(b)))
	}
	return nil
}

// app registers ns's app, whose executor holds execCPU.
func (g *teamRig) app(ns string, execCPU float64) error {
	return g.p.API.PostJSON("/api/app?namespace="+ns, fmt.Sprintf(`{"appName":"team","appURL":"file://%s","bootstrapScript":"team.sh","cpuCount":%g,"memoryMB":64,"appCacheEnable":true}`,
		g.script, execCPU))
}

// job registers a one-shard job of ns's app that runs secs seconds, on
// cron ("" none); misfire makes triggers add up.
func (g *teamRig) job(ns, name string, cpu float64, secs float64, cron string, misfire bool) error {
	body := fmt.Sprintf(`{"jobName":%q,"appName":"team","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":%g,"memoryMB":64,"jobParameter":"%g","misfire":%t`,
		name, cpu, secs, misfire)
	if cron != "" {
		body += fmt.Sprintf(`,"cron":%q`, cron)
	}
	return g.p.API.PostJSON("/api/job/register?namespace="+ns, body+"}")
}

func (g *teamRig) trigger(ns, job string) error {
	return g.p.API.PostJSON("/api/job/trigger?namespace="+ns, job)
}

// waitStarts waits until n starts of ns/job were written.
func (g *teamRig) waitStarts(ctx context.Context, ns, job string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c := 0
		for _, e := range readTeamEvents(g.out) {
			if e.start && e.ns == ns && e.job == job {
				c++
			}
		}
		if c >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s/%s: %d of %d starts within %s", ns, job, c, n, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

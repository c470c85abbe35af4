package multicluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// The clusters-move scenario's clusters.
const (
	local  = "local"  // the scheduler's embedded engine: the jobs run as real processes
	remote = "remote" // a bin/mesos-local of simulated agents, reached by mesos_url
)

// phase is one span of the run: calm (the namespace on one cluster), moves
// (moved to the other cluster every -mc-move-every) or drain (the
// namespace on both, remote first; remote drained, then undrained halfway).
type phase struct {
	kind     string
	from, to time.Time
}

// RunMove is clusters-move: -mc-move-jobs cron jobs firing every second in
// the default namespace, on a scheduler with two clusters; phases of
// -mc-phase alternate calm (the namespace on one cluster, remote and
// local in turn), moves and drain, -mc-cycles times, and each run's
// lateness (its start less the instant it serves) is counted in the phase
// its instant fell in. Every run records itself: the simulated agents
// with --sim-record, the embedded agent's processes by their script.
func RunMove(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	const sc = "clusters-move"
	o := options{env, opt}
	dir, cleanup, err := bench.TempDir(o.Env, "clusters-move")
	if err != nil {
		return err
	}
	defer cleanup()
	runLog := filepath.Join(dir, "runs.jsonl")
	mlDir := filepath.Join(dir, "remote")
	if err := os.MkdirAll(mlDir, 0o750); err != nil {
		return err
	}
	ml, err := bench.StartMesosLocal(o.BinDir, mlDir, "--sim-agents", "4", "--sim-agent-cpus", "8", "--sim-agent-mem-mb", "32768",
		"--sim-task-duration", "100ms", "--sim-record", runLog)
	if err != nil {
		return err
	}
	defer ml.Stop()
	list := filepath.Join(dir, "clusters.yaml")
	doc := fmt.Sprintf("clusters:\n  - {name: %s, engine: embedded}\n  - {name: %s, engine: mesos, mesos_url: %q}\n", local, remote, ml.URL)
	if err := os.WriteFile(list, []byte(doc), 0o600); err != nil {
		return err
	}
	schedDir := filepath.Join(dir, "sched")
	if err := os.MkdirAll(schedDir, 0o750); err != nil {
		return err
	}
	p, err := bench.StartScheduler(o.BinDir, schedDir, "--clusters-file", list, "--allow-file-app-urls=true",
		"--embedded-cpus", "2", "--embedded-mem-mb", "4096", "--isolation", "off")
	if err != nil {
		return err
	}
	defer p.Stop()
	if err := awaitLeader(p); err != nil {
		return err
	}
	if err := awaitClusters(ctx, p, 2, 1); err != nil {
		return err
	}
	app := filepath.Join(dir, "app.tar.gz")
	if err := writeApp(app, runLog); err != nil {
		return err
	}
	if err := p.API.PostJSON("/api/app", fmt.Sprintf(`{"appName":"mc_move","appURL":"file://%s","bootstrapScript":"bin/run.sh","cpuCount":0.01,"memoryMB":1,"appCacheEnable":true}`, app)); err != nil {
		return err
	}
	if err := setNamespace(p, remote); err != nil {
		return err
	}
	for i := range o.MoveJobs {
		if err := p.API.PostJSON("/api/job/register", fmt.Sprintf(`{"jobName":"mv-%03d","appName":"mc_move","jobExecutionType":"TRANSIENT","cron":"* * * * * ?","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":1}`, i)); err != nil {
			return err
		}
	}
	bench.Logf("%s: %d jobs every second on %s and %s; warm-up 10 s, then %d cycles of calm, moves, calm, drain (%s each; load average %s)",
		sc, o.MoveJobs, local, remote, o.Cycles, o.Phase, bench.Loadavg())
	if err := bench.SleepCtx(ctx, 10*time.Second); err != nil {
		return err
	}
	m0, err := p.API.Scrape()
	if err != nil {
		return err
	}
	load0 := bench.Loadavg()
	phases, moves, err := runPhases(ctx, o, p)
	if err != nil {
		return err
	}
	m1, err := p.API.Scrape()
	if err != nil {
		return err
	}
	if err := bench.SleepCtx(ctx, 3*time.Second); err != nil { // the last runs start
		return err
	}
	runs, err := readRuns(runLog)
	if err != nil {
		return err
	}
	byKind := map[string]map[string][]float64{} // kind → cluster → lateness
	for _, rn := range runs {
		if i := slices.IndexFunc(phases, func(ph phase) bool { return !rn.Nominal.Before(ph.from) && rn.Nominal.Before(ph.to) }); i >= 0 {
			k := phases[i].kind
			if byKind[k] == nil {
				byKind[k] = map[string][]float64{}
			}
			byKind[k][rn.Cluster] = append(byKind[k][rn.Cluster], rn.At.Sub(rn.Nominal).Seconds())
		}
	}
	r.Add(sc, "setup", fmt.Sprintf("%d jobs every second; %d cycles of calm, moves (a move every %s), calm, drain, %s each; %d moves, %d drains",
		o.MoveJobs, o.Cycles, o.MoveEvery, o.Phase, moves, o.Cycles), "", nil)
	for _, k := range []string{"calm", "moves", "drain"} {
		var all []float64
		var per []string
		for _, c := range []string{remote, local} {
			xs := byKind[k][c]
			all = append(all, xs...)
			if len(xs) > 0 {
				per = append(per, fmt.Sprintf("%s n=%d p99 %s", c, len(xs), bench.Ms(promtext.Percentile(xs, .99))))
			}
		}
		if len(all) == 0 {
			r.Add(sc, "fire lateness, "+k+" phases", "no run", "", nil)
			continue
		}
		r.Add(sc, "fire lateness (instant → process start) p50 / p99 / max, "+k+" phases",
			fmt.Sprintf("%s / %s / %s (n=%d; %s)", bench.Ms(promtext.Percentile(all, .5)), bench.Ms(promtext.Percentile(all, .99)),
				bench.Ms(promtext.Max(all)), len(all), strings.Join(per, "; ")), "", nil)
	}
	doubled, missed := fireGaps(runs, phases[0].from, phases[len(phases)-1].to)
	r.Add(sc, "fires run twice; fires with no run (over every phase)", fmt.Sprintf("%d; %d", doubled, missed), "0; 0", bench.Le(float64(doubled+missed), 0))
	late := m1.Histogram("elasticjob_fire_lateness_seconds").Minus(m0.Histogram("elasticjob_fire_lateness_seconds"))
	l99, _ := late.Quantile(0.99)
	r.Add(sc, "fire lateness p99 (instant → ready entry), every phase; load average at start; end", bench.Ms(l99)+"; "+load0+"; "+bench.Loadavg(), "", nil)
	return nil
}

// runPhases runs the cycles and returns their phases and the moves made.
func runPhases(ctx context.Context, o options, p *bench.Scheduler) ([]phase, int, error) {
	var phases []phase
	moves := 0
	on := remote
	other := func(c string) string {
		if c == remote {
			return local
		}
		return remote
	}
	for c := range o.Cycles {
		for _, kind := range []string{"calm", "moves", "calm", "drain"} {
			ph := phase{kind: kind, from: time.Now()}
			end := ph.from.Add(o.Phase)
			switch kind {
			case "calm":
				if c > 0 || len(phases) > 0 {
					on = other(on) // the calm phases sit on each cluster in turn
				}
				if err := setNamespace(p, on); err != nil {
					return nil, 0, err
				}
				if err := bench.SleepCtx(ctx, time.Until(end)); err != nil {
					return nil, 0, err
				}
			case "moves":
				for time.Until(end) > 0 {
					on = other(on)
					if err := setNamespace(p, on); err != nil {
						return nil, 0, err
					}
					moves++
					if err := bench.SleepCtx(ctx, min(o.MoveEvery, time.Until(end))); err != nil {
						return nil, 0, err
					}
				}
			case "drain":
				if err := setNamespace(p, remote, local); err != nil {
					return nil, 0, err
				}
				if err := drain(p, remote, true); err != nil {
					return nil, 0, err
				}
				if err := bench.SleepCtx(ctx, o.Phase/2); err != nil {
					return nil, 0, err
				}
				if err := drain(p, remote, false); err != nil {
					return nil, 0, err
				}
				if err := bench.SleepCtx(ctx, time.Until(end)); err != nil {
					return nil, 0, err
				}
			}
			ph.to = time.Now()
			phases = append(phases, ph)
			bench.Logf("clusters-move: %s phase done (namespace on %s)", kind, on)
		}
	}
	return phases, moves, nil
}

// setNamespace sets the default namespace's clusters.
func setNamespace(p *bench.Scheduler, clusters ...string) error {
	b, _ := json.Marshal(map[string]any{"clusters": clusters})
	return call(p, http.MethodPut, "/api/namespaces/default", b)
}

// drain drains (on) or undrains a cluster.
func drain(p *bench.Scheduler, cluster string, on bool) error {
	m := http.MethodDelete
	if on {
		m = http.MethodPut
	}
	return call(p, m, "/api/operate/clusters/"+cluster+"/drain", nil)
}

func call(p *bench.Scheduler, method, path string, body []byte) error {
	code, out, err := p.API.Do(method, path, "application/json", body)
	if err != nil {
		return err
	}
	if code/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, code, bytes.TrimSpace(out))
	}
	return nil
}

// clusterView is what awaitClusters reads of a cluster in GET /api/operate/clusters.
type clusterView struct {
	Agents int `json:"agents"`
}

// awaitClusters waits until the scheduler sees n clusters with at least
// agents agents each (a Kubernetes engine lists its nodes some seconds
// after it starts).
func awaitClusters(ctx context.Context, p *bench.Scheduler, n, agents int) error {
	for deadline := time.Now().Add(120 * time.Second); time.Now().Before(deadline); {
		var views []clusterView
		if code, out, err := p.API.Do(http.MethodGet, "/api/operate/clusters", "", nil); err == nil && code == 200 &&
			json.Unmarshal(out, &views) == nil && len(views) == n &&
			!slices.ContainsFunc(views, func(v clusterView) bool { return v.Agents < agents }) {
			return nil
		}
		if err := bench.SleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("the %d clusters did not all have %d agents within 120 s; log tail:\n%s", n, agents, bench.Tail(p.LogPath, 2000))
}

// writeApp writes the jobs' package: bin/run.sh appends the run's start,
// its job and the instant it serves to runLog as one JSON line (one
// write(2) on a file opened for appending, as mesos-local's --sim-record
// writes its own).
func writeApp(path, runLog string) error {
	script := `#!/bin/sh
printf '%s\n' "{\"ev\":\"start\",\"at\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)\",\"task\":\"$ELASTICJOB_TASK_ID\",\"job\":\"$ELASTICJOB_JOB_NAME\",\"nominal\":\"$ELASTICJOB_NOMINAL_AT\",\"cluster\":\"` + local + `\"}" >>'` + runLog + `'
`
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "bin/run.sh", Mode: 0o755, Size: int64(len(script)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write([]byte(script)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// moveRun is one run's start: where, when, and the instant it serves.
type moveRun struct {
	Ev      string    `json:"ev"`
	At      time.Time `json:"at"`
	Job     string    `json:"job"`
	Nominal time.Time `json:"nominal"`
	Cluster string    `json:"cluster"` // "" (mesos-local's lines): remote
}

// readRuns reads the run log's starts that serve a cron instant.
func readRuns(path string) ([]moveRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []moveRun
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rn moveRun
		if json.Unmarshal(sc.Bytes(), &rn) != nil || rn.Ev != "start" || rn.Nominal.IsZero() {
			continue
		}
		if rn.Cluster == "" {
			rn.Cluster = remote
		}
		out = append(out, rn)
	}
	return out, sc.Err()
}

// fireGaps counts, over [from, to), the fires (job, instant) with more
// than one run and the whole seconds with none.
func fireGaps(runs []moveRun, from, to time.Time) (doubled, missed int) {
	seen := map[string]map[int64]int{} // job → instant (Unix seconds) → runs
	for _, rn := range runs {
		if rn.Nominal.Before(from) || !rn.Nominal.Before(to) {
			continue
		}
		if seen[rn.Job] == nil {
			seen[rn.Job] = map[int64]int{}
		}
		seen[rn.Job][rn.Nominal.Unix()]++
	}
	first := from.Truncate(time.Second).Add(time.Second)
	for _, at := range seen {
		for t := first; t.Before(to.Truncate(time.Second)); t = t.Add(time.Second) {
			switch n := at[t.Unix()]; {
			case n == 0:
				missed++
			case n > 1:
				doubled += n - 1
			}
		}
	}
	return doubled, missed
}

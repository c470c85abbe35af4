package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// The workflow scenario, on the embedded default: node hand-off time (the
// last upstream shard's end → the node's first task start, both as the
// executors report them) over a 10-node chain and a 1 → 50 → 1 fan-out and
// fan-in of trivial jobs, run one after the other; then 200 concurrent
// runs of the 10-node chain, checked from the jobs' own records for lost
// and duplicated nodes.

// wfNode is what the scenario reads of a run's node.
type wfNode struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	DependsOn []string  `json:"dependsOn"`
	QueuedAt  time.Time `json:"queuedAt"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt"`
}

type wfRunDetail struct {
	State string   `json:"state"`
	Nodes []wfNode `json:"nodes"`
}

// handoffs are a finished run's hand-off times, and the part of each spent
// before the node's execution was queued (the workflow engine's share).
func handoffs(r wfRunDetail) (total, engine []float64) {
	byID := map[string]wfNode{}
	for _, n := range r.Nodes {
		byID[n.ID] = n
	}
	for _, n := range r.Nodes {
		if len(n.DependsOn) == 0 || n.StartedAt.IsZero() {
			continue
		}
		var last time.Time
		for _, d := range n.DependsOn {
			if e := byID[d].EndedAt; e.After(last) {
				last = e
			}
		}
		total = append(total, max(n.StartedAt.Sub(last).Seconds(), 0))
		engine = append(engine, max(n.QueuedAt.Sub(last).Seconds(), 0))
	}
	return total, engine
}

// wfBench is one scheduler with the scenario's jobs.
type wfBench struct {
	p   *bench.Scheduler
	out string // the jobs' records: OUT/JOB.log, one line (the run parameter) per execution
}

func (b *wfBench) job(name string) error {
	line := fmt.Sprintf(`echo "$ELASTICJOB_JOB_PARAMETER" >> %s/$ELASTICJOB_JOB_NAME.log #`, b.out)
	body, _ := json.Marshal(map[string]any{"jobName": name, "appName": "wf_app", "jobExecutionType": "TRANSIENT", "jobType": "SCRIPT",
		"shardingTotalCount": 1, "cpuCount": 0.01, "memoryMB": 4, "props": map[string]string{"script.command.line": line}})
	return b.p.API.PostJSON("/api/job/register", string(body))
}

// workflow registers a workflow whose nodes are jobs of the same names.
func (b *wfBench) workflow(name string, maxRuns int, nodes []map[string]any) error {
	for _, n := range nodes {
		if err := b.job(n["id"].(string)); err != nil {
			return err
		}
		n["job"] = n["id"]
	}
	body, _ := json.Marshal(map[string]any{"name": name, "maxConcurrentRuns": maxRuns, "nodes": nodes})
	return b.p.API.PostJSON("/api/workflow", string(body))
}

func (b *wfBench) trigger(name, param string) (string, error) {
	body, _ := json.Marshal(map[string]string{"parameter": param})
	code, out, err := b.p.API.Do(http.MethodPost, "/api/workflow/"+name+"/trigger", "application/json", body)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("trigger %s: %d %s", name, code, out)
	}
	var v struct {
		RunID string `json:"runId"`
	}
	return v.RunID, json.Unmarshal(out, &v)
}

func (b *wfBench) run(name, id string) (wfRunDetail, error) {
	var r wfRunDetail
	code, out, err := b.p.API.Do(http.MethodGet, "/api/workflow/"+name+"/runs/"+id, "", nil)
	if err != nil {
		return r, err
	}
	if code != http.StatusOK {
		return r, fmt.Errorf("run %s/%s: %d %s", name, id, code, out)
	}
	return r, json.Unmarshal(out, &r)
}

// wait polls a run until it ends.
func (b *wfBench) wait(ctx context.Context, name, id string, timeout time.Duration) (wfRunDetail, error) {
	deadline := time.Now().Add(timeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		r, err := b.run(name, id)
		if err != nil {
			return r, err
		}
		if r.State != "QUEUED" && r.State != "RUNNING" {
			return r, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return wfRunDetail{}, fmt.Errorf("run %s/%s did not end within %v", name, id, timeout)
}

func chainNodes(prefix string, n int) []map[string]any {
	var nodes []map[string]any
	for i := 1; i <= n; i++ {
		node := map[string]any{"id": fmt.Sprintf("%s%02d", prefix, i)}
		if i > 1 {
			node["dependsOn"] = []string{fmt.Sprintf("%s%02d", prefix, i-1)}
		}
		nodes = append(nodes, node)
	}
	return nodes
}

func fanNodes(width int) []map[string]any {
	nodes := []map[string]any{{"id": "fan_root"}}
	var mids []string
	for i := 1; i <= width; i++ {
		id := fmt.Sprintf("fan_%02d", i)
		mids = append(mids, id)
		nodes = append(nodes, map[string]any{"id": id, "dependsOn": []string{"fan_root"}})
	}
	return append(nodes, map[string]any{"id": "fan_sink", "dependsOn": mids})
}

// Run runs the workflow scenario: sequential runs of the 10-node chain and
// the fan-out, then concurrent runs of the chain.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	dir, cleanup, err := bench.TempDir(o.Env, "workflow")
	if err != nil {
		return err
	}
	defer cleanup()
	b := &wfBench{out: filepath.Join(dir, "out")}
	for _, d := range []string{b.out, filepath.Join(dir, "sched")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	if b.p, err = bench.StartScheduler(o.BinDir, filepath.Join(dir, "sched")); err != nil {
		return err
	}
	defer func() { b.p.Stop() }()
	if _, err := b.p.WaitHealthy(30 * time.Second); err != nil {
		return err
	}
	if err := b.p.API.PostJSON("/api/app", `{"appName":"wf_app","bootstrapScript":"none","cpuCount":0.1,"memoryMB":32}`); err != nil {
		return err
	}
	if err := b.workflow("chain10", 200, chainNodes("ch", 10)); err != nil {
		return err
	}
	if err := b.workflow("fan50", 1, fanNodes(50)); err != nil {
		return err
	}
	for _, s := range []struct {
		name, label string
		runs        int
	}{{"chain10", "10-node chain", o.wfRuns}, {"fan50", "1 → 50 → 1", max(o.wfRuns/4, 3)}} {
		if err := b.handoffSeries(ctx, r, s.name, s.label, s.runs); err != nil {
			return err
		}
	}
	return b.concurrent(ctx, r, "chain10", o.wfConcurrent)
}

// handoffSeries runs a workflow runs times, one after the other (the first
// is a warm-up: executor start, not counted), and reports the hand-offs.
func (b *wfBench) handoffSeries(ctx context.Context, r *bench.Report, name, label string, runs int) error {
	var total, engine []float64
	bench.Logf("workflow/%s: %d sequential runs (plus a warm-up)", name, runs)
	for i := 0; i <= runs && ctx.Err() == nil; i++ {
		id, err := b.trigger(name, fmt.Sprintf("seq-%d", i))
		if err != nil {
			return err
		}
		run, err := b.wait(ctx, name, id, 2*time.Minute)
		if err != nil {
			return err
		}
		if run.State != "SUCCEEDED" {
			return fmt.Errorf("run %s of %s ended %s", id, name, run.State)
		}
		if i == 0 {
			continue
		}
		t, e := handoffs(run)
		total, engine = append(total, t...), append(engine, e...)
	}
	p50, p99 := promtext.Percentile(total, .5), promtext.Percentile(total, .99)
	r.Add("workflow", fmt.Sprintf("%s: node hand-off p50 (%d hand-offs)", label, len(total)), bench.Ms(p50), "≤ 10 ms", bench.Le(p50, .010))
	r.Add("workflow", label+": node hand-off p99", bench.Ms(p99), "", nil)
	r.Add("workflow", label+": of which upstream end → node queued, p50 / p99", bench.Ms(promtext.Percentile(engine, .5))+" / "+bench.Ms(promtext.Percentile(engine, .99)), "", nil)
	return nil
}

// concurrent triggers n runs of a workflow at once and checks, from the
// jobs' own records, that every node of every run ran exactly once.
func (b *wfBench) concurrent(ctx context.Context, r *bench.Report, name string, n int) error {
	bench.Logf("workflow/%s: %d concurrent runs", name, n)
	for _, f := range mustGlob(filepath.Join(b.out, "*.log")) {
		_ = os.Remove(f)
	}
	start := time.Now()
	ids := make([]string, 0, n)
	for i := range n {
		id, err := b.trigger(name, fmt.Sprintf("run-%03d", i))
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	succeeded := 0
	for _, id := range ids {
		run, err := b.wait(ctx, name, id, 10*time.Minute)
		if err != nil {
			return err
		}
		if run.State == "SUCCEEDED" {
			succeeded++
		}
	}
	took := time.Since(start)
	lost, dup := 0, 0
	for _, node := range chainNodes("ch", 10) {
		seen := map[string]int{}
		if data, err := os.ReadFile(filepath.Join(b.out, node["id"].(string)+".log")); err == nil {
			for _, l := range strings.Fields(string(data)) {
				seen[l]++
			}
		}
		for i := range n {
			switch c := seen[fmt.Sprintf("run-%03d", i)]; {
			case c == 0:
				lost++
			case c > 1:
				dup += c - 1
			}
		}
	}
	ok := succeeded == n && lost == 0 && dup == 0
	r.Add("workflow", fmt.Sprintf("%d concurrent runs of the 10-node chain: succeeded", n), fmt.Sprintf("%d / %d", succeeded, n), "all", &ok)
	zero := lost == 0 && dup == 0
	r.Add("workflow", "  nodes lost / run twice (the jobs' own records)", fmt.Sprintf("%d / %d of %d", lost, dup, n*10), "0 / 0", &zero)
	r.Add("workflow", "  all runs done in", took.Round(time.Millisecond).String(),
		"", nil)
	r.Add("workflow", "  node executions per second", fmt.Sprintf("%.0f", float64(n*10)/took.Seconds()), "", nil)
	return nil
}

func mustGlob(p string) []string {
	m, _ := filepath.Glob(p)
	return m
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}

package soak

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

// Config is one soak run.
type Config struct {
	Shape    string        // "zk", "etcd", "embedded", "real-mesos", "kube", "clusters" or "clusters-real"
	Duration time.Duration // how long the nemesis injects faults
	Seed     uint64
	Jobs     int
	Dir      string // working directory (logs, data, the run log under recorder/)
	Bin      string // directory with scheduler, executor and mesos-local
	Services string // scripts/services.sh
	K8sHome  string // the kube and clusters-real shapes' Kubernetes build (scripts/start.sh, stop.sh, bin.sh, certs.sh)
	KwokBin  string // clusters-real: the kwok binary playing its kwok cluster's nodes
	Session  time.Duration
	// Warmup runs the workload without faults first; Tail keeps it running
	// after the last fault healed (the calm lateness and the liveness
	// check come from it).
	Warmup, Tail   time.Duration
	MinGap, MaxGap time.Duration
	Trigger        time.Duration
	Change         time.Duration
	Heal           time.Duration // checker bound on the first fire after the last heal
	// Periods are the jobs' cron periods in seconds, each dividing 60
	// (nil: 2, 3, 4, 5, 6, 10).
	Periods []int
	// MesosHome and Agents are the real-Mesos shape's Mesos build and
	// agent count; the clusters shape runs a third, real Mesos cluster of
	// that build when MesosHome is set.
	MesosHome string
	Agents    int
	// Faults names the fault kinds the nemesis draws from (nil: all the
	// shape's).
	Faults []string
	Log    *slog.Logger
}

// Result is a run's faults and the checker's report.
type Result struct {
	Faults []Fault
	Report Report
}

// NewShape makes the named shape.
func NewShape(c Config, runLog string) (Shape, error) {
	switch c.Shape {
	case "zk":
		return &ZK{Bin: c.Bin, Services: c.Services, Dir: filepath.Join(c.Dir, "cluster"), RunLog: runLog, Session: c.Session, Seed: c.Seed, Log: c.Log}, nil
	case "etcd":
		return &Etcd{ZK: ZK{Bin: c.Bin, Dir: filepath.Join(c.Dir, "cluster"), RunLog: runLog, Seed: c.Seed, Log: c.Log}}, nil
	case "embedded":
		return &Embedded{Bin: c.Bin, Dir: filepath.Join(c.Dir, "cluster"), RunLog: runLog, Seed: c.Seed, Log: c.Log}, nil
	case ShapeRealMesos:
		return &RealMesos{Etcd: Etcd{ZK: ZK{Bin: c.Bin, Dir: filepath.Join(c.Dir, "cluster"), RunLog: runLog, Seed: c.Seed, Log: c.Log}},
			Home: c.MesosHome, Agents: c.Agents}, nil
	case ShapeClusters:
		return &Clusters{Bin: c.Bin, Dir: filepath.Join(c.Dir, "cluster"), RunLog: runLog, Seed: c.Seed, Log: c.Log, MesosHome: c.MesosHome}, nil
	case ShapeClustersReal:
		if c.MesosHome == "" || c.K8sHome == "" {
			return nil, fmt.Errorf("soak: %s needs a Mesos build and a Kubernetes build (-mesos-home, -k8s-home)", ShapeClustersReal)
		}
		return ClustersReal{&Clusters{Bin: c.Bin, Dir: filepath.Join(c.Dir, "cluster"), RunLog: runLog, Seed: c.Seed, Log: c.Log,
			MesosHome: c.MesosHome, KubeHome: c.K8sHome, KwokBin: c.KwokBin}}, nil
	case "kube":
		return &Kube{Etcd: Etcd{ZK: ZK{Bin: c.Bin, Dir: filepath.Join(c.Dir, "cluster"), RunLog: runLog, Seed: c.Seed, Log: c.Log}}, Home: c.K8sHome}, nil
	default:
		return nil, fmt.Errorf("soak: unknown shape %q (have: zk, etcd, embedded, %s, kube, %s, %s)", c.Shape, ShapeRealMesos, ShapeClusters, ShapeClustersReal)
	}
}

// Build compiles the scheduler, the executor and mesos-local from the
// module at root into dir, static (the kube shape's image holds the
// executor alone).
func Build(ctx context.Context, root, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/scheduler", "./cmd/executor", "./cmd/mesos-local")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("soak: go build: %w: %s", err, out)
	}
	return nil
}

// Run starts the shape, the workload and the nemesis, stops them, and
// checks the run log.
func Run(ctx context.Context, c Config) (Result, error) {
	var res Result
	if c.Session == 0 {
		c.Session = 3 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	recDir := filepath.Join(c.Dir, "recorder") // outside every fault: nothing but mesos-local's appends touches it
	for _, d := range []string{recDir, filepath.Join(c.Dir, "cluster")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return res, err
		}
	}
	runLog := filepath.Join(recDir, "runs.jsonl")
	app := filepath.Join(c.Dir, "soak.tar.gz")
	script := []byte("#!/bin/sh\nexit 0\n") // the simulated agents never run it
	if c.Shape == ShapeRealMesos || c.Shape == ShapeClusters {
		script = recordScript(runLog) // real processes record themselves (the clusters shape's on its embedded engine)
	}
	if err := writeApp(app, script); err != nil {
		return res, err
	}
	shape, err := NewShape(c, runLog)
	if err != nil {
		return res, err
	}
	drawn, err := onlyFaults(shape, c.Faults)
	if err != nil {
		return res, err
	}
	defer func() {
		if err := shape.Stop(); err != nil {
			c.Log.Warn("soak: stop", "err", err)
		}
	}()
	c.Log.Info("soak: starting the shape", "shape", shape.Name())
	if err := shape.Start(ctx); err != nil {
		return res, err
	}
	w := &Workload{APIs: shape.APIs(), Jobs: c.Jobs, Seed: c.Seed, AppURL: "file://" + app, Log: c.Log, Trigger: c.Trigger, Change: c.Change}
	if r, ok := shape.(realRuns); ok { // the runs' own package, and sizes a real node runs
		w.AppURL, w.Sizes = r.AppURL(), r.Sizes()
	}
	if len(c.Periods) > 0 {
		w.Sizes.Periods = c.Periods
	}
	if m, ok := shape.(interface{ Names() []string }); ok {
		w.Clusters = m.Names()
	}
	if p, ok := shape.(interface{ Pinned(int) []string }); ok {
		w.Pinned = p.Pinned
	}
	c.Log.Info("soak: registering the workload", "jobs", c.Jobs)
	if err := w.Setup(ctx); err != nil {
		return res, err
	}
	wctx, stopWork := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	sleep(ctx, c.Warmup)
	c.Log.Info("soak: faults on", "duration", c.Duration, "seed", c.Seed)
	n := Nemesis{Shape: drawn, Seed: c.Seed, MinGap: c.MinGap, MaxGap: c.MaxGap, Log: c.Log}
	res.Faults = n.Run(ctx, time.Now().Add(c.Duration))
	c.Log.Info("soak: faults off; tail", "faults", len(res.Faults), "tail", c.Tail)
	sleep(ctx, c.Tail)
	stopWork()
	<-done
	end := time.Now()
	jobs := w.Close(end)
	settle := 3 * time.Second // the runs of the last fires start
	if r, ok := shape.(realRuns); ok {
		settle = r.Settle()
	}
	sleep(ctx, settle)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	pending, pendingAt := fetchPending(ctx, shape.APIs()) // a backlog not drained yet
	if pending == nil {
		c.Log.Warn("soak: the ready queue could not be read; a backlog left at the end counts as lost")
	}
	var hist map[string][]Outcome
	var replicas map[string]map[string][]Outcome
	var histAt time.Time
	if h, ok := shape.(Historian); ok && h.HistoryAPI() != "" {
		sleep(ctx, 5*time.Second) // the last runs' ends reach history
		histAt = time.Now()
		if hist, err = fetchHistory(ctx, h.HistoryAPI()); err != nil {
			return res, err
		}
	} else if h, ok := shape.(Replicated); ok {
		sleep(ctx, 5*time.Second) // the last runs' ends reach every replica's history
		histAt = time.Now()
		replicas = map[string]map[string][]Outcome{}
		for name, base := range h.HistoryAPIs() {
			if replicas[name], err = fetchHistory(ctx, base); err != nil {
				return res, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	var launched map[string]time.Time
	_, kube := shape.(*Kube)
	_, kubes := shape.(ClustersReal)
	if kube || kubes { // a pod starts seconds after its launch: stale-term and stale-run compare launches
		for _, base := range shape.APIs() {
			if launched, err = fetchLaunches(ctx, base); err == nil {
				break
			}
			c.Log.Warn("soak: launch instants", "api", base, "err", err)
		}
	}
	if err := shape.Stop(); err != nil {
		c.Log.Warn("soak: stop", "err", err)
	}
	if err := (Saved{Seed: c.Seed, Shape: c.Shape, Jobs: jobs, Faults: res.Faults, End: end, Heal: c.Heal, History: hist, Replicas: replicas, HistoryAt: histAt,
		Pending: pending, PendingAt: pendingAt, Launched: launched}).write(c.Dir); err != nil {
		return res, err
	}
	lines, err := runlog.ReadFile(runLog)
	if err != nil {
		return res, err
	}
	res.Report = Check(Input{Runs: lines, Jobs: jobs, Faults: res.Faults, Heal: c.Heal, End: end, History: hist, Replicas: replicas, HistoryAt: histAt,
		Pending: pending, PendingAt: pendingAt, Launched: launched, StoreHold: storeHold(c.Shape)})
	return res, nil
}

// realRuns is a shape whose tasks run in real processes: they fetch the
// app package at AppURL (whose script reports each run to the run log),
// the workload's jobs are sized for a real node, and the runs of the
// last fires and triggers start within Settle after the workload stops.
type realRuns interface {
	AppURL() string
	Sizes() Sizes
	Settle() time.Duration
}

// writeApp writes the app package the jobs name, script as its
// bin/run.sh (the simulated agents never fetch it; the API wants a
// package that exists).
func writeApp(path string, script []byte) error {
	var buf bytes.Buffer
	if err := writeTarGz(&buf, "bin/run.sh", script); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeTarGz writes a gzipped tar holding one executable script.
func writeTarGz(w io.Writer, name string, script []byte) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(script)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(script); err != nil {
		return err
	}
	return errors.Join(tw.Close(), gz.Close())
}

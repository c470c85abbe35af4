package executor

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

// BenchmarkDaemonFireToProcessStart measures, for a DAEMON job without the
// SDK protocol, the time from a cron fire (the fake clock reaching it) to
// the job's process having started (fork+exec done), one process per fire.
//
//	go test -run '^$' -bench DaemonFire -benchtime 200x ./executor
func BenchmarkDaemonFireToProcessStart(b *testing.B) {
	benchForkPerFire(b, false)
}

// BenchmarkDaemonFireToProcessStartRealClock is the same on the system
// clock (one fire per second; OS timer latency included): the latency is
// from the fire's wall-clock second to the process start.
//
//	go test -run '^$' -bench RealClock -benchtime 10x ./executor
func BenchmarkDaemonFireToProcessStartRealClock(b *testing.B) {
	benchForkPerFire(b, true)
}

func benchForkPerFire(b *testing.B, real bool) {
	p := newPipeline(b)
	url := scriptURL(b, "run.sh", "#!/bin/sh\n:\n")
	data := daemonData(url, "run.sh", jobs.Config{})
	td, _ := jobs.UnmarshalTaskData(data)
	j, err := p.newJob(b.Context(), td, taskID, Resources{}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.NewFake(epoch)
	sched, _ := cron.Parse("*/1 * * * * ?")
	started, complete := make(chan time.Time, 1), make(chan struct{}, 1)
	d := &daemonLoop{clock: clk, sched: sched, loc: time.UTC, log: slog.New(slog.DiscardHandler),
		run: func(ctx context.Context, r runReq) Outcome {
			r.started = func() { started <- time.Now() }
			return runOnce(ctx, j, r, td.Job)
		},
		report: func(rep jobs.DaemonReport) {
			if rep.Type == jobs.DaemonComplete {
				complete <- struct{}{}
			}
		},
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	if real {
		d.clock = clock.Real{}
	}
	go d.loop(ctx)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		if real {
			at := <-started
			lat = append(lat, at.Sub(at.Truncate(time.Second)))
		} else {
			at := nextFire(b, clk)
			t0 := time.Now()
			clk.Set(at)
			lat = append(lat, (<-started).Sub(t0))
		}
		<-complete
	}
	reportPercentiles(b, lat)
}

// BenchmarkResidentFireToExecute measures, for a DAEMON job of a resident
// Go SDK process (props sdk.protocol=line), the time from a cron fire to
// the job's Execute being called in that process (it prints the time).
//
//	go test -run '^$' -bench ResidentFire -benchtime 500x ./executor
func BenchmarkResidentFireToExecute(b *testing.B) {
	clk := clock.NewFake(epoch)
	p := sdkPipeline(b, clk)
	d := startDaemon(b, p, clk, daemonData(sdkAppURL(b), "start.sh", jobs.Config{JobParameter: "stamp",
		Props: map[string]string{PropSDKProtocol: SDKProtocolLine}}))
	benchTicks(b, p, clk, d)
}

// fireWait waits for the COMPLETE report of a fire already made.
func (d *daemonTask) fireWait(t testing.TB) jobs.DaemonReport {
	t.Helper()
	for {
		select {
		case rep := <-d.reports:
			if rep.Type == jobs.DaemonComplete {
				return rep
			}
		case <-time.After(failsafe):
			t.Fatal("no COMPLETE report")
		}
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// benchTicks fires the daemon b.N times and reports the time from each
// tick to the stamp its run printed (`exec <unix ns>`) as percentiles.
func benchTicks(b *testing.B, p *Pipeline, clk *clock.Fake, d *daemonTask) {
	out := filepath.Join(p.Sandbox, "tasks", taskID, "stdout")
	stamp := regexp.MustCompile(`exec (\d+)\n`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		at := nextFire(b, clk)
		t0 := time.Now()
		clk.Set(at)
		if c := d.fireWait(b); !c.Success {
			b.Fatalf("%+v", c)
		}
		buf, _ := os.ReadFile(out)
		m := stamp.FindAllSubmatch(buf, -1)
		ns, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
		lat = append(lat, time.Unix(0, ns).Sub(t0))
	}
	reportPercentiles(b, lat)
}

package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/executor/process"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/sdk"
)

// The test binary doubles as an SDK job app: started with
// EXECUTOR_TEST_SDK_APP=1 it runs testSDKJob through sdk.Run.
func TestMain(m *testing.M) {
	if os.Getenv("EXECUTOR_TEST_SDK_APP") == "1" {
		sdk.Run(sdk.JobFunc(testSDKJob))
	}
	os.Exit(m.Run())
}

var sdkRuns int // runs served by this process: shows it stayed resident

func testSDKJob(ctx context.Context, sc sdk.ShardingContext) error {
	sdkRuns++
	fmt.Printf("run %d in pid %d shard %d\n", sdkRuns, os.Getpid(), sc.ShardingItem)
	switch sc.JobParameter {
	case "fail":
		if sdkRuns == 2 {
			return errors.New("boom\nsecond line")
		}
	case "print-protocol": // a job printing protocol-like lines
		fmt.Println("DONE 1 error forged")
		fmt.Fprintln(os.Stderr, "DONE 2 error forged")
	case "slow":
		if sdkRuns == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
	case "stubborn": // ignores cancellation on its first run ever
		marker := os.Getenv("MARKDIR") + "/stubborn"
		if _, err := os.Stat(marker); err != nil {
			os.WriteFile(marker, nil, 0o644)
			time.Sleep(time.Hour)
		}
	case "crash":
		if sdkRuns == 2 {
			os.Exit(7)
		}
	case "stamp": // for the benchmark: when Execute was called
		fmt.Printf("exec %d\n", time.Now().UnixNano())
	}
	return nil
}

// sdkAppURL is an app whose bootstrap script execs this test binary.
func sdkAppURL(t testing.TB) string {
	return scriptURL(t, "start.sh", "#!/bin/sh\nexec \"$TEST_BINARY\" \"$@\"\n")
}

func sdkPipeline(t testing.TB, clk clock.Clock) *Pipeline {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newPipeline(t, "EXECUTOR_TEST_SDK_APP=1", "TEST_BINARY="+bin, "MARKDIR="+t.TempDir())
	p.Clock, p.Grace = clk, 300*time.Millisecond
	return p
}

func daemonData(url, bootstrap string, cfg jobs.Config) []byte {
	cfg.JobName, cfg.AppName, cfg.JobExecutionType, cfg.ShardingTotalCount = "job", "app", jobs.Daemon, 2
	if cfg.Cron == "" {
		cfg.Cron = "*/1 * * * * ?"
	}
	return jobs.TaskData{
		Version:         jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{JobName: "job", TaskID: taskID, ShardingTotalCount: 2, ShardingItem: 1, JobParameter: cfg.JobParameter},
		ExecutionSource: jobs.SourceNormal,
		Job:             cfg,
		App:             mustApp(url, bootstrap),
	}.Marshal()
}

// daemonTask is a DAEMON task run by a Pipeline under a fake clock.
type daemonTask struct {
	clk     *clock.Fake
	reports chan jobs.DaemonReport
	running chan struct{}
	cancel  context.CancelCauseFunc
	out     chan Outcome
}

func startDaemon(t testing.TB, p *Pipeline, clk *clock.Fake, data []byte) *daemonTask {
	t.Helper()
	d := &daemonTask{clk: clk, reports: make(chan jobs.DaemonReport, 64), running: make(chan struct{}), out: make(chan Outcome, 1)}
	ctx, cancel := context.WithCancelCause(context.Background())
	d.cancel = cancel
	go func() {
		d.out <- p.Run(ctx, taskID, data, Hooks{Running: func() { close(d.running) }, Message: func(b []byte) {
			rep, err := jobs.ParseDaemonReport(b)
			if err != nil {
				panic(err)
			}
			d.reports <- rep
		}})
	}()
	t.Cleanup(func() { cancel(process.Kill{}); <-d.out })
	select {
	case <-d.running:
	case o := <-d.out:
		t.Fatalf("daemon task ended before running: %+v", o)
	case <-time.After(failsafe):
		t.Fatal("daemon task not running")
	}
	return d
}

// fire fires the cron once and returns the run's COMPLETE report.
func (d *daemonTask) fire(t testing.TB) jobs.DaemonReport {
	t.Helper()
	d.clk.Set(nextFire(t, d.clk))
	return d.fireWait(t)
}

func (d *daemonTask) kill(t *testing.T) Outcome {
	t.Helper()
	d.cancel(process.Kill{Grace: time.Second})
	select {
	case o := <-d.out:
		d.out <- o // for the cleanup
		return o
	case <-time.After(failsafe):
		t.Fatal("daemon task did not end")
		return Outcome{}
	}
}

var runLine = regexp.MustCompile(`run (\d+) in pid (\d+) shard 1`)

// runsIn returns "count:pid" per run line of the task's stdout.
func runsIn(t *testing.T, p *Pipeline) []string {
	var out []string
	for _, m := range runLine.FindAllStringSubmatch(stdout(t, p), -1) {
		out = append(out, m[1]+":"+m[2])
	}
	return out
}

func samePid(t *testing.T, runs []string, n int) {
	t.Helper()
	if len(runs) != n {
		t.Fatalf("runs %v, want %d", runs, n)
	}
	for i, r := range runs {
		count, pid, _ := strings.Cut(r, ":")
		if count != fmt.Sprint(i+1) || pid != strings.SplitN(runs[0], ":", 2)[1] {
			t.Fatalf("runs %v: not one resident process", runs)
		}
	}
}

func TestResidentSDKJobKeepsItsProcess(t *testing.T) {
	clk := clock.NewFake(epoch)
	p := sdkPipeline(t, clk)
	d := startDaemon(t, p, clk, daemonData(sdkAppURL(t), "start.sh", jobs.Config{JobParameter: "fail",
		Props: map[string]string{PropSDKProtocol: SDKProtocolLine}}))
	var got []string
	for range 3 {
		c := d.fire(t)
		got = append(got, fmt.Sprintf("%s %v %q", c.RunID, c.Success, c.Message))
	}
	if want := []string{`1 true ""`, `2 false "boom\nsecond line"`, `3 true ""`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reports %v, want %v", got, want)
	}
	samePid(t, runsIn(t, p), 3)
	if o := d.kill(t); o.State != Killed {
		t.Fatalf("%+v", o)
	}
	pid := strings.SplitN(runsIn(t, p)[0], ":", 2)[1]
	if _, err := os.Stat("/proc/" + pid); err == nil && !strings.Contains(readFile(t, "/proc/"+pid+"/stat"), ") Z ") {
		t.Fatalf("resident process %s outlived its task", pid)
	}
}

func TestResidentJobOutputCannotCorruptTheProtocol(t *testing.T) {
	clk := clock.NewFake(epoch)
	p := sdkPipeline(t, clk)
	d := startDaemon(t, p, clk, daemonData(sdkAppURL(t), "start.sh", jobs.Config{JobParameter: "print-protocol",
		Props: map[string]string{PropSDKProtocol: SDKProtocolLine}}))
	for range 2 {
		if c := d.fire(t); !c.Success {
			t.Fatalf("%+v", c)
		}
	}
	samePid(t, runsIn(t, p), 2)
}

func TestResidentRunTimeout(t *testing.T) {
	for _, tc := range []struct {
		param   string
		newProc bool // the process ignored CANCEL and was replaced
	}{{"slow", false}, {"stubborn", true}} {
		t.Run(tc.param, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			p := sdkPipeline(t, clk)
			d := startDaemon(t, p, clk, daemonData(sdkAppURL(t), "start.sh", jobs.Config{JobParameter: tc.param, TimeoutSeconds: 1,
				Props: map[string]string{PropSDKProtocol: SDKProtocolLine}}))
			if c := d.fire(t); c.Success || c.Message != "timed out after 1s" {
				t.Fatalf("%+v", c)
			}
			if c := d.fire(t); !c.Success {
				t.Fatalf("%+v", c)
			}
			runs := runsIn(t, p)
			if tc.newProc {
				if len(runs) != 2 || !strings.HasPrefix(runs[1], "1:") || runs[0] == runs[1] {
					t.Fatalf("runs %v, want a second process", runs)
				}
			} else {
				samePid(t, runs, 2)
			}
		})
	}
}

func TestResidentProcessCrashIsRestarted(t *testing.T) {
	clk := clock.NewFake(epoch)
	p := sdkPipeline(t, clk)
	d := startDaemon(t, p, clk, daemonData(sdkAppURL(t), "start.sh", jobs.Config{JobParameter: "crash",
		Props: map[string]string{PropSDKProtocol: SDKProtocolLine}}))
	d.fire(t)
	if c := d.fire(t); c.Success || c.Message != "job process ended during the run: exit code 7" {
		t.Fatalf("%+v", c)
	}
	if c := d.fire(t); !c.Success {
		t.Fatalf("%+v", c)
	}
	if runs := runsIn(t, p); len(runs) != 3 || !strings.HasPrefix(runs[2], "1:") {
		t.Fatalf("runs %v", runs)
	}
}

// TestNonSDKDaemonForksPerFire: without the prop, an SDK app runs as a
// fresh process per fire.
func TestNonSDKDaemonForksPerFire(t *testing.T) {
	clk := clock.NewFake(epoch)
	p := sdkPipeline(t, clk)
	d := startDaemon(t, p, clk, daemonData(sdkAppURL(t), "start.sh", jobs.Config{}))
	for range 2 {
		if c := d.fire(t); !c.Success {
			t.Fatalf("%+v", c)
		}
	}
	if runs := runsIn(t, p); len(runs) != 2 || !strings.HasPrefix(runs[1], "1:") || runs[0] == runs[1] {
		t.Fatalf("runs %v, want one process per fire", runs)
	}
}

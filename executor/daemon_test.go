package executor

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/executor/fakeagent"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// daemonRig drives a daemonLoop whose runs the test starts and ends.
type daemonRig struct {
	clk     *clock.Fake
	started chan runReq
	finish  chan Outcome
	reports chan jobs.DaemonReport
	cancel  context.CancelFunc
	ended   chan struct{}
}

func newDaemonRig(t *testing.T, expr string, loc *time.Location, misfire bool) *daemonRig {
	t.Helper()
	sched, err := cron.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	r := &daemonRig{clk: clock.NewFake(epoch), started: make(chan runReq, 8), finish: make(chan Outcome),
		reports: make(chan jobs.DaemonReport, 64), ended: make(chan struct{})}
	d := &daemonLoop{clock: r.clk, sched: sched, loc: loc, misfire: misfire, log: slog.New(slog.DiscardHandler),
		base: jobs.DaemonReport{TaskID: taskID, ShardingItem: 1, Hostname: "h", IP: "10.0.0.1"},
		run: func(ctx context.Context, req runReq) Outcome {
			r.started <- req
			select {
			case o := <-r.finish:
				return o
			case <-ctx.Done():
				return Outcome{State: Killed, Message: "killed"}
			}
		},
		report: func(rep jobs.DaemonReport) { r.reports <- rep },
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { defer close(r.ended); d.loop(ctx) }()
	t.Cleanup(func() { cancel(); <-r.ended })
	r.armed(t)
	return r
}

// armed waits until the loop has (re-)armed its timer after a fire.
func (r *daemonRig) armed(t *testing.T) {
	t.Helper()
	select {
	case <-r.clk.Changed:
	case <-time.After(failsafe):
		t.Fatal("daemon loop did not arm its timer")
	}
}

// tick advances to the next fire and waits until the loop handled it.
func (r *daemonRig) tick(t *testing.T) {
	t.Helper()
	next, ok := r.clk.Pending()
	if !ok {
		t.Fatal("no timer armed")
	}
	r.clk.Set(next)
	r.armed(t)
}

func (r *daemonRig) nextStart(t *testing.T) runReq {
	t.Helper()
	select {
	case req := <-r.started:
		return req
	case <-time.After(failsafe):
		t.Fatal("no run started")
		return runReq{}
	}
}

func (r *daemonRig) noStart(t *testing.T) {
	t.Helper()
	select {
	case req := <-r.started:
		t.Fatalf("run %s (%s) started", req.id, req.source)
	default:
	}
}

func (r *daemonRig) report(t *testing.T, typ, runID string) jobs.DaemonReport {
	t.Helper()
	select {
	case rep := <-r.reports:
		if rep.Type != typ || rep.RunID != runID || rep.TaskID != taskID || rep.ShardingItem != 1 || rep.Hostname != "h" || rep.IP != "10.0.0.1" {
			t.Fatalf("report %+v, want %s of run %s", rep, typ, runID)
		}
		return rep
	case <-time.After(failsafe):
		t.Fatalf("no %s report", typ)
		return jobs.DaemonReport{}
	}
}

func TestDaemonSkipsFiresDuringARun(t *testing.T) {
	r := newDaemonRig(t, "*/1 * * * * ?", time.UTC, false)
	r.tick(t)
	if req := r.nextStart(t); req.id != "1" || req.source != jobs.SourceNormal {
		t.Fatalf("run %+v", req)
	}
	begin := r.report(t, jobs.DaemonBegin, "1")
	if !begin.StartTime.Equal(epoch.Add(time.Second)) || begin.ExecutionSource != jobs.SourceNormal {
		t.Fatalf("begin %+v", begin)
	}
	r.tick(t) // fires during run 1: skipped
	r.tick(t)
	r.noStart(t)
	r.finish <- Outcome{State: Failed, Message: "exit code 2: no"}
	c := r.report(t, jobs.DaemonComplete, "1")
	if c.Success || c.Message != "exit code 2: no" || !c.CompleteTime.Equal(epoch.Add(3*time.Second)) {
		t.Fatalf("complete %+v", c)
	}
	r.noStart(t)
	r.tick(t)
	if req := r.nextStart(t); req.id != "2" || req.source != jobs.SourceNormal {
		t.Fatalf("run %+v", req)
	}
	r.report(t, jobs.DaemonBegin, "2")
	r.finish <- Outcome{State: Finished}
	if c := r.report(t, jobs.DaemonComplete, "2"); !c.Success || c.Message != "" {
		t.Fatalf("complete %+v", c)
	}
}

func TestDaemonMisfireQueuesOneRun(t *testing.T) {
	r := newDaemonRig(t, "*/1 * * * * ?", time.UTC, true)
	r.tick(t)
	r.nextStart(t)
	r.report(t, jobs.DaemonBegin, "1")
	r.tick(t) // queued
	r.tick(t) // already one queued: skipped
	r.tick(t)
	r.noStart(t)
	r.finish <- Outcome{State: Finished}
	r.report(t, jobs.DaemonComplete, "1")
	if req := r.nextStart(t); req.id != "2" || req.source != jobs.SourceMisfire {
		t.Fatalf("queued run %+v", req)
	}
	if b := r.report(t, jobs.DaemonBegin, "2"); b.ExecutionSource != jobs.SourceMisfire {
		t.Fatalf("begin %+v", b)
	}
	r.finish <- Outcome{State: Finished}
	r.report(t, jobs.DaemonComplete, "2")
	r.tick(t)
	if req := r.nextStart(t); req.id != "3" || req.source != jobs.SourceNormal {
		t.Fatalf("run %+v: more than one run was queued", req)
	}
	r.finish <- Outcome{State: Finished}
}

func TestDaemonCronUsesTheJobsTimeZone(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	r := newDaemonRig(t, "0 30 21 * * ?", shanghai, false) // 21:30 in Shanghai = 13:30 UTC
	if next, _ := r.clk.Pending(); !next.Equal(time.Date(2026, 3, 1, 13, 30, 0, 0, time.UTC)) {
		t.Fatalf("first fire at %v", next)
	}
	r.tick(t)
	r.nextStart(t)
	if next, _ := r.clk.Pending(); !next.Equal(time.Date(2026, 3, 2, 13, 30, 0, 0, time.UTC)) {
		t.Fatalf("second fire at %v", next)
	}
	r.finish <- Outcome{State: Finished}
}

func TestDaemonKillMidRun(t *testing.T) {
	r := newDaemonRig(t, "*/1 * * * * ?", time.UTC, true)
	r.tick(t)
	r.nextStart(t)
	r.report(t, jobs.DaemonBegin, "1")
	r.tick(t) // queued, must not run after the kill
	r.cancel()
	if c := r.report(t, jobs.DaemonComplete, "1"); c.Success || c.Message != "killed" {
		t.Fatalf("complete %+v", c)
	}
	select {
	case <-r.ended:
	case <-time.After(failsafe):
		t.Fatal("loop did not end")
	}
	r.noStart(t)
}

// TestDaemonTaskThroughTheExecutor runs a DAEMON task under the fake agent
// with a fake clock: RUNNING once, then per fire a BEGIN and COMPLETE
// MESSAGE, each run's output appended with a separator; KILL ends it.
func TestDaemonTaskThroughTheExecutor(t *testing.T) {
	clk := clock.NewFake(epoch)
	h := startWith(t, true, Options{IdleTimeout: 0}, func(p *Pipeline) { p.Clock = clk })
	url := scriptURL(t, "run.sh", "#!/bin/sh\necho \"run by $$ source $ELASTICJOB_EXECUTION_SOURCE\"\n[ -e \"$PIDDIR/fail\" ] && { echo bad >&2; exit 3; }\n: > \"$PIDDIR/fail\"\n")
	data := jobs.TaskData{
		Version:         jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{JobName: "job", TaskID: taskID, ShardingTotalCount: 2, ShardingItem: 1},
		ExecutionSource: jobs.SourceNormal,
		Job:             jobs.Config{JobName: "job", AppName: "app", JobExecutionType: jobs.Daemon, Cron: "*/1 * * * * ?", ShardingTotalCount: 2},
		App:             mustApp(url, "run.sh"),
	}.Marshal()
	h.agent.Send(fakeagent.Launch(taskID, data))
	if got := states(h.updates(t, 2)); got != taskID+":TASK_STARTING "+taskID+":TASK_RUNNING" {
		t.Fatalf("updates %s", got)
	}
	var reps []jobs.DaemonReport
	for range 2 {
		clk.Set(nextFire(t, clk))
		reps = append(reps, h.message(t), h.message(t))
	}
	want := []string{"DAEMON_BEGIN 1 false", "DAEMON_COMPLETE 1 true", "DAEMON_BEGIN 2 false", "DAEMON_COMPLETE 2 false exit code 3: bad"}
	for i, rep := range reps {
		got := strings.TrimSpace(rep.Type + " " + rep.RunID + " " + map[bool]string{true: "true", false: "false"}[rep.Success] + " " + rep.Message)
		if got != want[i] || rep.TaskID != taskID {
			t.Fatalf("report %d: %q, want %q", i, got, want[i])
		}
	}
	h.agent.Send(fakeagent.Kill(taskID, int64(time.Second)))
	if u := h.updates(t, 1)[0]; u.Status.GetState() != mesos.TASK_KILLED {
		t.Fatalf("final update %v", u.Status.GetState())
	}
	out := readFile(t, h.pipe.Sandbox+"/tasks/"+taskID+"/stdout")
	if strings.Count(out, "--- elasticjob daemon run ") != 2 || strings.Count(out, "source NORMAL_TRIGGER") != 2 ||
		!strings.Contains(out, "--- elasticjob daemon run 2 (NORMAL_TRIGGER) at 2026-03-01T12:00:02Z ---") {
		t.Fatalf("stdout:\n%s", out)
	}
	if err := h.exit(t); err != nil { // idle timeout 0: exits once the daemon task is gone
		t.Fatal(err)
	}
}

func TestDaemonTaskWithBadTimeZoneFails(t *testing.T) {
	p := newPipeline(t)
	data := jobs.TaskData{
		Version:         jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{JobName: "job", TaskID: taskID, ShardingTotalCount: 1},
		Job:             jobs.Config{JobName: "job", JobExecutionType: jobs.Daemon, Cron: "* * * * * ?", TimeZone: "Mars/Olympus"},
		App:             mustApp(scriptURL(t, "r.sh", "#!/bin/sh\n"), "r.sh"),
	}.Marshal()
	out, running := runTask(t, p, data)
	if out.State != Failed || running || !strings.Contains(out.Message, `timeZone "Mars/Olympus"`) {
		t.Fatalf("%+v running=%v", out, running)
	}
}

// nextFire waits until the daemon cron is armed for a future fire and
// returns that fire's time.
func nextFire(t testing.TB, clk *clock.Fake) time.Time {
	t.Helper()
	deadline := time.Now().Add(failsafe)
	for {
		if at, ok := clk.Pending(); ok && at.After(clk.Now()) {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon cron not armed")
		}
		time.Sleep(time.Millisecond)
	}
}

// message returns the next call, which must be a daemon report MESSAGE.
func (h *harness) message(t *testing.T) jobs.DaemonReport {
	t.Helper()
	c := h.next(t)
	if c.Type != executor.Call_MESSAGE {
		t.Fatalf("call %v, want MESSAGE", c.Type)
	}
	rep, err := jobs.ParseDaemonReport(c.Message.Data)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

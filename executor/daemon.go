package executor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

// daemon runs a DAEMON task: TASK_RUNNING once the job is prepared, then
// the job on its cron inside the executor until the task is killed.
func (p *Pipeline) daemon(ctx context.Context, td jobs.TaskData, j job, h Hooks, log *slog.Logger) Outcome {
	sched, err := td.Job.Schedule()
	if err == nil && sched == nil {
		err = fmt.Errorf("DAEMON job %s has no cron", td.Job.JobName)
	}
	if err != nil {
		return Outcome{State: Failed, Message: err.Error()}
	}
	loc, err := td.Job.Location(time.Local)
	if err != nil {
		return Outcome{State: Failed, Message: err.Error()}
	}
	clk := p.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	host, ip := p.host()
	dir := filepath.Join(p.Sandbox, "tasks", safeName(td.ShardingContext.TaskID))
	d := &daemonLoop{
		clock: clk, sched: sched, loc: loc, misfire: td.Job.Misfire, log: log,
		base: jobs.DaemonReport{TaskID: td.ShardingContext.TaskID, ShardingItem: td.ShardingContext.ShardingItem,
			Hostname: host, IP: ip},
		run: func(ctx context.Context, r runReq) Outcome {
			separator(dir, r, clk.Now())
			return runOnce(ctx, j, r, td.Job)
		},
		report: func(rep jobs.DaemonReport) {
			if h.Message != nil {
				h.Message(rep.Marshal())
			}
		},
	}
	if h.Running != nil {
		h.Running()
	}
	log.Info("daemon started", "cron", td.Job.Cron, "zone", loc.String(), "misfire", td.Job.Misfire)
	d.loop(ctx)
	return Outcome{State: Killed, Message: "killed"}
}

// daemonLoop fires a job on its cron, in the job's time zone, and never
// overlaps a run with itself: a fire during a run is skipped, or with
// misfire queued to run right after it (at most one queued run). Each run
// is reported DAEMON_BEGIN, then DAEMON_COMPLETE with its result.
type daemonLoop struct {
	clock   clock.Clock
	sched   *cron.Schedule
	loc     *time.Location
	misfire bool
	base    jobs.DaemonReport // TaskID, ShardingItem, Hostname, IP
	run     func(ctx context.Context, r runReq) Outcome
	report  func(jobs.DaemonReport)
	log     *slog.Logger
}

// loop runs until ctx ends, then waits for the run in progress (which ctx
// kills) to end. Reports are sent from the loop itself, BEGIN before a run
// starts and COMPLETE once the loop has seen it end, so a fire that
// follows a COMPLETE always finds the job idle.
func (d *daemonLoop) loop(ctx context.Context) {
	rs := &daemonRuns{d: d, ctx: ctx, ended: make(chan runEnd, 1)}
	var fire <-chan time.Time
	var timer clock.Timer
	now := d.clock.Now()
	if next := d.sched.Next(now, d.loc); !next.IsZero() {
		timer = d.clock.NewTimer(next.Sub(now))
		fire = timer.C()
		defer timer.Stop()
	} else {
		d.log.Warn("daemon cron never fires", "cron", d.sched.String())
	}
	for {
		select {
		case <-ctx.Done():
			if rs.running {
				rs.complete(<-rs.ended)
			}
			return
		case at := <-fire:
			rs.fired()
			// Re-arm from the later of the fire and now, so a stalled
			// executor fires once and then on schedule, not for every
			// fire it missed.
			now := d.clock.Now()
			if next := d.sched.Next(later(now, at), d.loc); next.IsZero() {
				fire = nil
			} else {
				timer.Reset(next.Sub(now))
			}
		case e := <-rs.ended:
			rs.complete(e)
			if rs.queued && ctx.Err() == nil {
				rs.queued = false
				rs.start(jobs.SourceMisfire)
			}
		}
	}
}

// daemonRuns is the loop's runs: how many started, the one in progress,
// and a fire queued behind it (misfire).
type daemonRuns struct {
	d       *daemonLoop
	ctx     context.Context
	n       int
	running bool
	queued  bool
	ended   chan runEnd
}

// fired acts on a fire: a run starts, or with one in progress the fire is
// queued once (misfire) or skipped.
func (rs *daemonRuns) fired() {
	switch {
	case !rs.running:
		rs.start(jobs.SourceNormal)
	case rs.d.misfire && !rs.queued:
		rs.queued = true
		rs.d.log.Info("daemon fire during a run: queued (misfire)")
	default:
		rs.d.log.Info("daemon fire during a run: skipped")
	}
}

// start reports BEGIN and starts a run.
func (rs *daemonRuns) start(src jobs.ExecutionSource) {
	d := rs.d
	rs.n++
	r := runReq{id: strconv.Itoa(rs.n), source: src}
	rep := d.base
	rep.Type, rep.RunID, rep.ExecutionSource, rep.StartTime = jobs.DaemonBegin, r.id, r.source, d.clock.Now()
	d.report(rep)
	rs.running = true
	go func() { rs.ended <- runEnd{rep, d.run(rs.ctx, r)} }()
}

// complete reports a run's COMPLETE.
func (rs *daemonRuns) complete(e runEnd) {
	d := rs.d
	rs.running = false
	rep := e.rep
	rep.Type, rep.CompleteTime = jobs.DaemonComplete, d.clock.Now()
	rep.Success, rep.Message = e.out.State == Finished, e.out.Message
	d.log.Info("daemon run ended", "run", rep.RunID, "source", rep.ExecutionSource, "state", e.out.State.String(), "message", e.out.Message)
	d.report(rep)
}

// runEnd is a run's BEGIN report and how the run ended.
type runEnd struct {
	rep jobs.DaemonReport
	out Outcome
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// separator marks the start of a daemon run in the task's stdout and
// stderr, which every run appends to.
func separator(dir string, r runReq, at time.Time) {
	line := fmt.Sprintf("--- elasticjob daemon run %s (%s) at %s ---\n", r.id, r.source, at.UTC().Format(time.RFC3339Nano))
	for _, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			continue
		}
		_, _ = f.WriteString(line)
		f.Close()
	}
}

package clustersim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// The cluster shape in the simulated cluster: on ZooKeeper a standby runs
// beside the leader all through the window (what production runs), its
// registry copy following the leader's writes; after the window the
// leader is killed (kill -9) and the standby's first launch is timed.

// reportLag adds an instance's registry copy lag over the window (the
// elasticjob_registry_cache_lag_seconds histogram: a change's notification
// reaching the instance → its copy holding it).
func (s *simRun) reportLag(who string, m0, m1 promtext.Set) {
	h := m1.Histogram("elasticjob_registry_cache_lag_seconds").Minus(m0.Histogram("elasticjob_registry_cache_lag_seconds"))
	if h.Count == 0 {
		s.r.Add(s.sc, who+": registry copy lag (notification → copy), p50 / p99", "no change observed", "", nil)
		return
	}
	p50, _ := h.Quantile(.5)
	p99, b99 := h.Quantile(.99)
	s.r.Add(s.sc, who+": registry copy lag (notification → copy), p50 / p99 (bucket ≤); changes/s",
		fmt.Sprintf("%s / %s (≤ %s); %.0f/s", bench.Ms(p50), bench.Ms(p99), bench.Ms(b99), h.Count/s.window), "", nil)
}

// takeoverSettle is the pause between a killed scheduler's return as a
// standby and the next kill of -sim-takeovers: the new leader past its
// term's start (its backlog launching), the returned member caught up.
const takeoverSettle = 20 * time.Second

// takeovers times o.simTakeovers takeovers one after another: each kills
// the leader, times the next one's first launch, brings the killed
// scheduler back as a standby (its data directory kept, as an operator
// restarts it) and lets the cluster settle. One takeover a run is one
// sample of a figure that varies with the load of the moment; several
// after one registration give a distribution at the same shape.
func (s *simRun) takeovers(ctx context.Context) error {
	var took []float64
	for i := range s.o.simTakeovers {
		d, err := s.takeover(ctx, i+1)
		if err != nil {
			return err
		}
		took = append(took, d.Seconds())
		if i+1 == s.o.simTakeovers {
			break
		}
		if err := s.restartKilled(); err != nil {
			return fmt.Errorf("bring the killed scheduler back: %w", err)
		}
		bench.Logf("%s: settling %s before the next kill", s.sc, takeoverSettle)
		if err := bench.SleepCtx(ctx, takeoverSettle); err != nil {
			return err
		}
	}
	if len(took) > 1 {
		sorted := slices.Clone(took)
		slices.Sort(sorted)
		parts := make([]string, len(took))
		for i, t := range took {
			parts[i] = fmt.Sprintf("%.2f", t)
		}
		s.r.Add(s.sc, fmt.Sprintf("takeovers at %d jobs: each (s), in order; median / max of %d", s.registered, len(took)),
			strings.Join(parts, ", ")+fmt.Sprintf("; %.2f / %.2f s", promtext.Percentile(sorted, .5), sorted[len(sorted)-1]), "", nil)
	}
	return nil
}

// takeover kills the leader (SIGKILL) and times until the simulated master
// accepts the first task from a standby, which leads by then: on
// ZooKeeper the dead leader's session must expire (zk_session_timeout,
// 15 s by default) before the standby's election node is first; on etcd
// its lease (1 s).
func (s *simRun) takeover(ctx context.Context, nth int) (time.Duration, error) {
	if err := s.awaitLeader(ctx, time.Minute); err != nil {
		return 0, err
	}
	bench.Logf("%s: takeover %d: kill -9 of the leader (pid %d); waiting for a standby's first launch (load average %s)", s.sc, nth, s.p.PID(), bench.Loadavg())
	load := bench.Loadavg()
	killed := time.Now()
	if err := syscall.Kill(s.p.PID(), syscall.SIGKILL); err != nil {
		return 0, err
	}
	<-s.p.Exited
	s.p.API.Close()
	s.killed, s.p = s.p, nil
	time.Sleep(50 * time.Millisecond) // a call the dead leader had sent is handled by now
	m, err := s.ml.Metrics()
	if err != nil {
		return 0, err
	}
	before := m["embedded/tasks_launched"]
	for deadline := killed.Add(2 * time.Minute); time.Now().Before(deadline); {
		if err := bench.SleepCtx(ctx, 10*time.Millisecond); err != nil {
			return 0, err
		}
		if m, err := s.ml.Metrics(); err == nil && m["embedded/tasks_launched"] > before {
			took := time.Since(killed)
			shape, goal := "session timeout 15 s", 17*time.Second
			if s.store == "etcd" {
				shape, goal = "etcd, lease 1 s", 2*time.Second
			}
			what := fmt.Sprintf("takeover at %d jobs: kill -9 of the leader → first launch by the new one (%s)", s.registered, shape)
			if s.o.simTakeovers > 1 {
				what = fmt.Sprintf("takeover %d of %d at %d jobs (%s; load average %s)", nth, s.o.simTakeovers, s.registered, shape, load)
			}
			s.r.Add(s.sc, what, took.Round(time.Millisecond).String(), "≤ "+goal.String(), bench.Le(took.Seconds(), goal.Seconds()))
			switch n := s.electionsSince(killed, time.Now()); {
			case n == 0:
				s.r.Note(fmt.Sprintf("%s: takeover %d saw no election between the kill and the first launch (the one killed no longer led: not a takeover)", s.sc, nth))
			case n > 1:
				s.r.Note(fmt.Sprintf("%s: takeover %d saw %d elections between the kill and the first launch (a term lost on the way: the figure is not the takeover alone)", s.sc, nth, n))
			}
			s.takeoverSteps(killed)
			return took, nil
		}
	}
	return 0, fmt.Errorf("no launch within 2 minutes of the kill; the standby's log tail:\n%s", bench.Tail(s.sb.LogPath, 2000))
}

// restartKilled starts the scheduler killed by the last takeover again,
// with its data directory and flags, as a standby (s.p until findLeader
// swaps in the one leading).
func (s *simRun) restartKilled() error {
	spec, ok := s.specs[s.killed]
	if !ok {
		return errors.New("no record of how the killed scheduler was started")
	}
	delete(s.specs, s.killed)
	p, err := bench.StartScheduler(s.o.BinDir, spec.dir, spec.args...)
	if err != nil {
		return err
	}
	s.specs[p] = spec
	s.p, s.killed = p, nil
	_, err = p.WaitHealthy(2 * time.Minute)
	return err
}

// electionsSince counts the "elected leader" lines every scheduler logged
// in [from, to]: one for a clean takeover.
func (s *simRun) electionsSince(from, to time.Time) int {
	n := 0
	for p := range s.specs {
		data, err := os.ReadFile(p.LogPath)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(data)) {
			if !strings.Contains(line, "elected leader") {
				continue
			}
			stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil && !at.Before(from) && !at.After(to) {
				n++
			}
		}
	}
	return n
}

// findLeader makes s.p the instance leading now: on a loaded machine the
// leadership may have moved during registration or the window, and killing
// a standby would time nothing. Leadership as each instance's
// elasticjob_leader gauge says; unchanged when none says so.
func (s *simRun) findLeader() bool {
	if s.p != nil {
		if m, err := s.p.API.Scrape(); err == nil && m.Sum("elasticjob_leader") == 1 {
			return true
		}
	}
	for _, sb := range []**bench.Scheduler{&s.sb, &s.sb2} {
		if *sb == nil {
			continue
		}
		if m, err := (*sb).API.Scrape(); err == nil && m.Sum("elasticjob_leader") == 1 {
			bench.Logf("%s: the leadership moved to pid %d since the start", s.sc, (*sb).PID())
			s.p, *sb = *sb, s.p
			return true
		}
	}
	return false
}

// awaitLeader waits (bounded) until a scheduler says it leads and makes it
// s.p: a kill while the leadership is moving (a term lost under load)
// would kill a standby or time an election already under way.
func (s *simRun) awaitLeader(ctx context.Context, within time.Duration) error {
	for deadline := time.Now().Add(within); !s.findLeader(); {
		if time.Now().After(deadline) {
			return fmt.Errorf("no scheduler led within %s", within)
		}
		if err := bench.SleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// takeoverSteps logs when the new leader's term passed its steps, from its
// log (info level), counted from the kill: where a takeover's time went. On
// etcd either standby may have won: both logs are read (a standby that did
// not lead logs none of the steps after the kill).
func (s *simRun) takeoverSteps(killed time.Time) {
	for _, sb := range []*bench.Scheduler{s.sb, s.sb2} {
		if sb != nil {
			s.stepsOf(sb.LogPath, killed)
		}
	}
}

func (s *simRun) stepsOf(logPath string, killed time.Time) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return
	}
	steps := []string{"elected leader", "registry cache caught up", "msg=framework", "msg=leading", "msg=subscribed", "reconciling running tasks", "first offers arrived",
		"every running task reconciled", "queued fires missed", "first launch round of the term", "first launch committed"}
	for line := range strings.Lines(string(data)) {
		for _, step := range steps {
			if !strings.Contains(line, step) {
				continue
			}
			// slog's text handler: time=2026-11-26T13:35:00.123+00:00 level=INFO msg=...
			stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil && at.After(killed) {
				bench.Logf("%s: takeover +%.2f s: %s", s.sc, at.Sub(killed).Seconds(), strings.TrimSpace(line))
			}
		}
	}
}

// startEtcd starts the etcd variant: three schedulers, each with an etcd
// member of its own (they bootstrap together), on the simulated master;
// the one elected is s.p, the others its standbys.
func (s *simRun) startEtcd(args []string) error {
	var peers []string
	var clients []int
	for i := range 3 {
		cp, err := bench.FreePort()
		if err != nil {
			return err
		}
		pp, err := bench.FreePort()
		if err != nil {
			return err
		}
		clients = append(clients, cp)
		peers = append(peers, fmt.Sprintf("s%d=http://127.0.0.1:%d", i, pp))
	}
	var ps []*bench.Scheduler
	for i := range 3 {
		dir := filepath.Join(s.dir, fmt.Sprintf("s%d", i))
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		p, err := s.startSched(dir, append(args, "--registry", "etcd", "--etcd-name", fmt.Sprintf("s%d", i),
			"--etcd-peers", strings.Join(peers, ","), "--etcd-client-url", fmt.Sprintf("http://127.0.0.1:%d", clients[i]))...)
		if err != nil {
			return err
		}
		ps = append(ps, p)
		s.p, s.sb, s.sb2 = ps[0], nil, nil // stop() stops what started
		if len(ps) > 1 {
			s.sb = ps[1]
		}
		if len(ps) > 2 {
			s.sb2 = ps[2]
		}
	}
	for _, p := range ps {
		if _, err := p.WaitHealthy(2 * time.Minute); err != nil {
			return err
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		for i, p := range ps {
			if m, err := p.API.Scrape(); err == nil && m.Sum("elasticjob_leader") == 1 {
				s.p, s.sb, s.sb2 = p, ps[(i+1)%3], ps[(i+2)%3]
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no scheduler became leader within 60 s; log tail:\n%s", bench.Tail(ps[0].LogPath, 2000))
		}
	}
}

// noteTermLost says when the measured scheduler led at the window's start
// and not at its end: its successor's launches are not counted, so a slice
// of 0/s is this, not a stalled cluster.
func (s *simRun) noteTermLost(m0, m1 promtext.Set) {
	if m0.Sum("elasticjob_leader") == 1 && m1.Sum("elasticjob_leader") != 1 {
		s.r.Note(s.sc + ": the measured scheduler lost its term during the window (its election lease lapsed: a spurious election); " +
			"launches/s, CPU per launch and the latencies cover only its part of the window")
	}
}

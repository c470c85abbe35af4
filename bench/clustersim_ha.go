package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// The cluster shape in the simulated cluster: on ZooKeeper a standby runs
// beside the leader all through the window (what production runs), its
// registry copy following the leader's writes; after the window the
// leader is killed (kill -9) and the standby's first launch is timed.

// reportLag adds an instance's registry copy lag over the window (the
// elasticjob_registry_cache_lag_seconds histogram: a change's notification
// reaching the instance → its copy holding it).
func (s *simRun) reportLag(who string, m0, m1 metricSet) {
	h := m1.histogram("elasticjob_registry_cache_lag_seconds").minus(m0.histogram("elasticjob_registry_cache_lag_seconds"))
	if h.count == 0 {
		s.r.add(s.sc, who+": registry copy lag (notification → copy), p50 / p99", "no change observed", "", nil)
		return
	}
	p50, _ := h.quantile(.5)
	p99, b99 := h.quantile(.99)
	s.r.add(s.sc, who+": registry copy lag (notification → copy), p50 / p99 (bucket ≤); changes/s",
		fmt.Sprintf("%s / %s (≤ %s); %.0f/s", ms(p50), ms(p99), ms(b99), h.count/s.window), "", nil)
}

// takeover kills the leader (SIGKILL) and times until the simulated master
// accepts the first task from the standby, which leads by then: the dead
// leader's session must expire (zk_session_timeout, 15 s by default)
// before the standby's election node is first.
func (s *simRun) takeover(ctx context.Context) error {
	logf("%s: kill -9 of the leader (pid %d); waiting for the standby's first launch", s.sc, s.p.pid())
	killed := time.Now()
	if err := syscall.Kill(s.p.pid(), syscall.SIGKILL); err != nil {
		return err
	}
	<-s.p.exited
	s.p.api.close()
	s.p = nil
	time.Sleep(50 * time.Millisecond) // a call the dead leader had sent is handled by now
	m, err := s.ml.metrics()
	if err != nil {
		return err
	}
	before := m["embedded/tasks_launched"]
	for deadline := killed.Add(2 * time.Minute); time.Now().Before(deadline); {
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
		if m, err := s.ml.metrics(); err == nil && m["embedded/tasks_launched"] > before {
			took := time.Since(killed)
			s.r.add(s.sc, fmt.Sprintf("takeover at %d jobs: kill -9 of the leader → first launch by the new one (session timeout 15 s)", s.registered),
				took.Round(time.Millisecond).String(), "≤ 17 s", le(took.Seconds(), 17))
			s.takeoverSteps(killed)
			return nil
		}
	}
	return fmt.Errorf("no launch within 2 minutes of the kill; the standby's log tail:\n%s", tail(s.sb.logPath, 2000))
}

// takeoverSteps logs when the new leader's term passed its steps, from its
// log (info level), counted from the kill: where a takeover's time went.
func (s *simRun) takeoverSteps(killed time.Time) {
	data, err := os.ReadFile(s.sb.logPath)
	if err != nil {
		return
	}
	steps := []string{"elected leader", "reconciling running tasks", "every running task reconciled",
		"queued fires missed", "first launch round of the term"}
	for line := range strings.Lines(string(data)) {
		for _, step := range steps {
			if !strings.Contains(line, step) {
				continue
			}
			// slog's text handler: time=2026-11-26T13:35:00.123+00:00 level=INFO msg=...
			stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil && at.After(killed) {
				logf("%s: takeover +%.2f s: %s", s.sc, at.Sub(killed).Seconds(), strings.TrimSpace(line))
			}
		}
	}
}

package soak

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
)

// The checker judges a run against recorded expectations. From the workload (each job's windows,
// cron, misfire rule, type) and the fault log (the nemesis's faults with their spans, and the
// leader changes the run log's terms show: faultLog) it first computes, as data, every expected
// fire's fate: which ways of ending the scheduler's documented behaviour allows it, each granted by
// one rule of expectRules and bounded by the times that rule computes. Only then does the judge
// (judge.go) read the observed history and report a fire whose history shows none of the fates it
// was granted. A new circumstance is a new rule, stated once with why it holds, not an exception in
// the judge.

// Fate is a set of ways an expected fire may end.
type Fate uint16

const (
	// OwnRun: an execution of its own, serving its instant, or queued from its instant to the next.
	OwnRun Fate = 1 << iota
	// Collapse: folded into an execution of the job pending or running from its instant until
	// queuedBy (misfire=false).
	Collapse
	// CatchUp: stood for by a MISFIRE execution queued after it: a new term's one execution for the
	// instants no leader fired, or its own launch rolled back and queued again (misfire=false).
	CatchUp
	// Replay: a MISFIRE execution of its own, queued from stagedFrom on and before its window's cut
	// (misfire=true).
	Replay
	// Stall: skipped by a leader that stalled over its instant (misfire=false); Report.Stalled.
	Stall
	// Cleared: cleared while pending by the change that closed its window.
	Cleared
	// Relaunch: stood for by a FAILOVER relaunch of the launch that carried it.
	Relaunch
	// LostBeforeStart: its task recorded in history as lost before it started and not run again.
	LostBeforeStart
	// Backlog: still waiting in the job's ready entry at the end (misfire=true).
	Backlog
)

// expect is one expected fire and the fates the rules grant it, with the bounds they are judged by.
type expect struct {
	fire
	misfire bool
	fates   Fate
	// queuedBy is until when the fire may have committed, so until when its own execution may be
	// queued and what it collapses into may be pending: its next instant unless a rule says later.
	queuedBy time.Time
	// stagedFrom is the earliest its execution may be queued.
	stagedFrom time.Time
	// relaunchBy bounds when a FAILOVER relaunch standing for it (Relaunch) may start;
	// heldRelaunchBy when the relaunch of a never-started execution it collapsed into may
	// (Collapse; zero: no such collapse).
	relaunchBy, heldRelaunchBy time.Time
	// last: its window is the job's last and was open at the end.
	last bool
	// rules names the rules that applied, in order (for the tests and for debugging a verdict).
	rules []string
}

func (e expect) may(f Fate) bool { return e.fates&f != 0 }

// jobExpect is what a job's history is judged against.
type jobExpect struct {
	fires []expect // the expected fires, in order
	// edge are the fires within slack of a window's edges: each may have run once, none must.
	edge []fire
	// backlog is how many of the job's last misfire=true fires may still wait at the end
	// (Input.Pending, less the fires after the end).
	backlog int
	err     error // the job's cron does not parse
}

// expectEnv is what the rules read besides the job.
type expectEnv struct {
	slack time.Duration
	end   time.Time
	// faults is the fault log, each fault with the leader change after it and the hold of the
	// commit in flight as it began (faultLog).
	faults    []Fault
	pending   int // the job's executions still queued at pendingAt (Input.Pending)
	pendingAt time.Time
}

// expectRule grants fates or moves bounds of one expected fire.
type expectRule struct {
	name  string
	apply func(e *expect, env expectEnv) bool // reports whether it applied
}

// expectRules, applied in order to every expected fire.
var expectRules = []expectRule{
	// A fire commits at its instant, queuing one execution that launches from then on.
	{"own-execution", func(e *expect, _ expectEnv) bool { e.fates |= OwnRun; return true }},
	// The producer commits fires up to its lead ahead of their instant (scheduler's maxLead): a
	// fire staged into an entry with executions pending is queued when the one before it
	// launches, before its instant.
	{"staged-ahead", func(e *expect, _ expectEnv) bool { e.stagedFrom = e.at.Add(-stageLead); return true }},
	// misfire=false: a fire finding an execution of its job pending or running adds none
	// (docs/jobs.md, misfire).
	{"collapse", func(e *expect, _ expectEnv) bool {
		if e.misfire {
			return false
		}
		e.fates |= Collapse
		return true
	}},
	// misfire=false: a new term queues one MISFIRE execution for all the instants no leader fired
	// (the catch-up); a launch rolled back is queued again behind what is pending, as a misfire.
	{"catch-up", func(e *expect, _ expectEnv) bool {
		if e.misfire {
			return false
		}
		e.fates |= CatchUp
		return true
	}},
	// misfire=true: every instant missed or fired while an execution was pending or running runs,
	// one after the other, as MISFIRE.
	{"replay", func(e *expect, _ expectEnv) bool {
		if !e.misfire {
			return false
		}
		e.fates |= Replay
		return true
	}},
	// An update, disable or deregister clears the job's pending executions (docs/jobs.md).
	{"change-clears", func(e *expect, _ expectEnv) bool {
		if e.cut.IsZero() {
			return false
		}
		e.fates |= Cleared
		return true
	}},
	// A leader paused (SIGSTOP), or a producer held retrying a commit the store refused (a full
	// disk), that stalls for more than a period fires a misfire=false job once for the instants it
	// missed (the stall rule, docs/jobs.md); a misfire=true job replays each of them.
	{"stall", func(e *expect, env expectEnv) bool {
		if e.misfire {
			return false
		}
		for _, x := range env.faults {
			if (strings.HasPrefix(x.Kind, "pause-") || x.Kind == "disk-full") && within(e.at, x.Start, x.End) {
				e.fates |= Stall
				return true
			}
		}
		return false
	}},
	// No leader commits while a fault is on at the instant (its term lapsed, its store is away):
	// the fire commits at the heal, or is caught up by the next term before its first launch.
	{"fault-holds-commit", func(e *expect, env expectEnv) bool {
		applied := false
		for _, x := range env.faults {
			if within(e.at, x.Start, x.End) {
				e.queuedBy = maxTime(e.queuedBy, maxTime(x.End.Add(env.slack), x.resumed))
				applied = true
			}
		}
		return applied
	}},
	// A fault that takes a member of the store away holds a commit in flight as it began for up to
	// Input.StoreHold, healed or not, and the producer commits instants in order: a fire within that
	// hold may commit as late as its end.
	{"store-holds-commit", func(e *expect, env expectEnv) bool {
		applied := false
		for _, x := range env.faults {
			if within(e.at, x.Start, x.held) {
				e.queuedBy = maxTime(e.queuedBy, x.held.Add(env.slack))
				applied = true
			}
		}
		return applied
	}},
	// A task that never started (its agent died first, its launch lapsed with its term) runs again
	// at once as FAILOVER (docs/jobs.md, failover), once reconciliation finds it unknown: the
	// fire's own start may be that one, within a minute.
	{"failover-relaunch", func(e *expect, _ expectEnv) bool {
		e.fates |= Relaunch
		e.relaunchBy = e.at.Add(relaunchWithin)
		return true
	}},
	// A task whose node went with its runs (NodeGone, NodeCrashed) before it started is lost
	// only once the engine deleted its pod after the pod GC's quarantine, then runs again as
	// FAILOVER as any lost task does: a fire launched before the node went may be stood for by
	// that relaunch, within relaunchWithin of the loss.
	{"node-gone-relaunch", func(e *expect, env expectEnv) bool {
		applied := false
		for _, x := range env.faults {
			if nodeGone(x.Kind) && !e.at.After(x.Start.Add(env.slack)) && e.relaunchBy.After(x.Start) {
				e.relaunchBy = maxTime(e.relaunchBy, nodeGoneUntil(x, env.faults).Add(relaunchWithin))
				applied = true
			}
		}
		return applied
	}},
	// misfire=false: the execution a fire collapsed into may itself never have started and run
	// as a FAILOVER relaunch long after: on Kubernetes a launch whose pod never started (the API
	// server down, then its node lost) is lost only when its pod is gone, 40 s after its node left
	// (engine/kube's pod GC), and the fires meanwhile collapse into it.
	{"collapse-into-relaunch", func(e *expect, _ expectEnv) bool {
		if e.misfire {
			return false
		}
		e.heldRelaunchBy = e.at.Add(heldRelaunchWithin)
		return true
	}},
	// A task lost with its agent before it started is recorded as such and not run again without
	// failover (docs/jobs.md): nothing may have run for the fire, and history says why.
	{"lost-before-start", func(e *expect, _ expectEnv) bool { e.fates |= LostBeforeStart; return true }},
	// misfire=true executions run one at a time: a backlog a long outage left may not have drained
	// by the end (the ready entry's count read after it says how many wait).
	{"backlog-at-end", func(e *expect, env expectEnv) bool {
		if !e.misfire || !e.last || env.pending == 0 {
			return false
		}
		e.fates |= Backlog
		return true
	}},
}

// within: t in [from, to].
func within(t, from, to time.Time) bool { return !t.Before(from) && !t.After(to) }

// expectJob computes job j's expected fires and their fates.
func expectJob(j Job, env expectEnv) jobExpect { return expectJobBy(j, env, expectRules) }

// expectJobBy is expectJob by the given rules.
func expectJobBy(j Job, env expectEnv, rules []expectRule) jobExpect {
	fs, err := fires(j, env.slack, env.end)
	if err != nil {
		return jobExpect{err: err}
	}
	out := jobExpect{fires: make([]expect, 0, len(fs)), edge: edgeFires(j, env.slack, env.end), backlog: pendingAtEnd(j, env)}
	last := len(j.Windows) > 0 && !env.end.IsZero() && j.Windows[len(j.Windows)-1].To.Equal(env.end)
	lastFrom := time.Time{}
	if last {
		lastFrom = j.Windows[len(j.Windows)-1].From
	}
	for _, f := range fs {
		e := expect{fire: f, misfire: j.Misfire, queuedBy: f.next, stagedFrom: f.at, last: last && f.at.After(lastFrom)}
		for _, r := range rules {
			if r.apply(&e, env) {
				e.rules = append(e.rules, r.name)
			}
		}
		out.fires = append(out.fires, e)
	}
	return out
}

// fire is an expected fire instant, the cron's next instant after it,
// and whether its window was closed by a configuration change (update,
// disable, deregister clear a pending execution: docs/jobs.md).
type fire struct {
	at, next time.Time
	cut      time.Time // the change that closed the window (zero: the run's end)
	// closed is when that change had landed for sure (its answer; zero: the run's end): an
	// execution queued later is the next window's
	closed time.Time
}

// fires lists a job's expected fires: those of each window, Slack inside
// its edges.
func fires(j Job, slack time.Duration, end time.Time) ([]fire, error) {
	var out []fire
	for _, w := range j.Windows {
		s, err := cron.Parse(w.Cron)
		if err != nil {
			return nil, fmt.Errorf("job %s cron %q: %w", j.Name, w.Cron, err)
		}
		var cut, closed time.Time
		if !end.IsZero() && !w.To.Equal(end) {
			cut, closed = w.To, maxTime(w.To, w.Closing)
		}
		for t := s.Next(w.From.Add(slack), time.UTC); !t.IsZero() && !t.After(w.To.Add(-slack)); t = s.Next(t, time.UTC) {
			out = append(out, fire{at: t, next: s.Next(t, time.UTC), cut: cut, closed: closed})
		}
	}
	return out, nil
}

// relaunchWithin bounds how long after a fire the FAILOVER relaunch of its
// own launch that never started may start.
const relaunchWithin = time.Minute

// heldRelaunchWithin bounds how long after a fire the FAILOVER relaunch of
// the never-started execution it collapsed into may start: a node's loss on
// Kubernetes (up to 30 s of fault and the pod GC's 40 s quarantine) after
// an API server outage that held the fires pending.
const heldRelaunchWithin = 3 * time.Minute

// stageLead bounds how far ahead of its instant the producer stages a fire
// (scheduler's maxLead): a fire staged into a pending entry is queued when
// the execution before it launches, which may be before its instant.
const stageLead = 5 * time.Second

// edgeFires lists the fires within slack of a window's edges: not expected (the change may have
// landed on either side of them), yet one may have run, and its execution may be queued inside the
// window: a fire staged ahead of its instant into a pending entry (stageLead) is queued when the
// execution before it launches, up to a few seconds earlier.
//
// A change answered late may have landed long before its answer: the fires from its sending on are
// edge fires too.
func edgeFires(j Job, slack time.Duration, end time.Time) []fire {
	var out []fire
	for _, w := range j.Windows {
		s, err := cron.Parse(w.Cron)
		if err != nil {
			continue
		}
		from, to := w.From, w.To.Add(slack)
		if !w.Opening.IsZero() && w.Opening.Before(from) {
			from = w.Opening.Add(-time.Nanosecond) // Next is strictly after
		}
		if w.Closing.After(to) {
			to = w.Closing
		}
		var cut time.Time
		if !end.IsZero() && !w.To.Equal(end) {
			cut = w.To
		}
		for t := s.Next(from, time.UTC); !t.IsZero() && !t.After(to); t = s.Next(t, time.UTC) {
			if !t.After(w.From.Add(slack)) || t.After(w.To.Add(-slack)) {
				out = append(out, fire{at: t, next: s.Next(t, time.UTC), cut: cut})
			}
		}
	}
	slices.SortFunc(out, func(a, b fire) int { return a.at.Compare(b.at) })
	return out
}

// pendingAtEnd is how many of a misfire=true job's fires up to the end may
// still wait in its ready entry: the executions pending at pendingAt less
// the job's fires after the end (the scheduler fires on after the workload
// stopped) and within slack before it (not expected, yet they may queue).
func pendingAtEnd(j Job, env expectEnv) int {
	n := env.pending
	if n == 0 || !j.Misfire || len(j.Windows) == 0 {
		return 0
	}
	w := j.Windows[len(j.Windows)-1]
	if !w.To.Equal(env.end) { // closed before the end: its entry was cleared
		return 0
	}
	s, err := cron.Parse(w.Cron)
	if err != nil {
		return 0
	}
	for t := s.Next(env.end.Add(-env.slack), time.UTC); !t.IsZero() && !t.After(env.pendingAt); t = s.Next(t, time.UTC) { // and the edge's
		n--
	}
	return max(n, 0)
}

package soak

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExpectationRules holds one case per rule of expectRules: each builds the expectations of a
// job under a fault log and checks what that rule alone grants, so removing the rule (or narrowing
// it) fails its case; a second case per rule shows where it must not apply.
func TestExpectationRules(t *testing.T) {
	quorum := Fault{Kind: "etcd-quorum-lost", Start: at(3.5), End: at(6.5)}
	quorumResumed := quorum
	quorumResumed.resumed = at(9)
	held := Fault{Kind: "kill-leader", Start: at(3.5), End: at(3.6), held: at(3.5).Add(EtcdCommitHold)}
	pause := Fault{Kind: "pause-leader", Start: at(3.5), End: at(6.5)}
	gone := Fault{Kind: NodeGone, Start: at(4.5), End: at(6), Detail: "cluster kwok (node kwok-0)"}
	crashed := Fault{Kind: NodeCrashed, Start: at(4.5), End: at(60), Detail: "cluster kube (node 127.0.0.1, 4 containers killed)"}
	crashedBackEarly := crashed
	crashedBackEarly.End = at(44)
	changed := every2("j", false)
	changed.Windows = []Window{{From: at(0), To: at(5), Closing: at(5.2), Cron: "*/2 * * * * ?"}, {From: at(5.3), To: at(10), Cron: "*/2 * * * * ?"}}
	changedOn := changed
	changedOn.Misfire = true
	env := func(faults ...Fault) expectEnv { return expectEnv{slack: time.Second, end: at(10), faults: faults} }
	backlog := env()
	backlog.pending, backlog.pendingAt = 2, at(10.5)
	cases := []struct {
		rule  string
		job   Job
		env   expectEnv
		fire  float64 // the expected fire's instant
		holds bool    // whether the rule applies to it
		check func(e expect) bool
	}{
		{"own-execution", every2("j", false), env(), 4, true, func(e expect) bool { return e.may(OwnRun) }},
		{"staged-ahead", every2("j", true), env(), 4, true, func(e expect) bool { return e.stagedFrom.Equal(at(4).Add(-stageLead)) }},
		{"collapse", every2("j", false), env(), 4, true, func(e expect) bool { return e.may(Collapse) }},
		{"collapse", every2("j", true), env(), 4, false, func(e expect) bool { return !e.may(Collapse) }},
		{"catch-up", every2("j", false), env(), 4, true, func(e expect) bool { return e.may(CatchUp) }},
		{"catch-up", every2("j", true), env(), 4, false, func(e expect) bool { return !e.may(CatchUp) }},
		{"replay", every2("j", true), env(), 4, true, func(e expect) bool { return e.may(Replay) }},
		{"replay", every2("j", false), env(), 4, false, func(e expect) bool { return !e.may(Replay) }},
		{"change-clears", changed, env(), 2, true, func(e expect) bool {
			return e.may(Cleared) && e.cut.Equal(at(5)) && e.closed.Equal(at(5.2))
		}},
		{"change-clears", changed, env(), 8, false, func(e expect) bool { return !e.may(Cleared) }},
		{"stall", every2("j", false), env(pause), 4, true, func(e expect) bool { return e.may(Stall) }},
		{"stall", every2("j", true), env(pause), 4, false, func(e expect) bool { return !e.may(Stall) }},
		{"stall", every2("j", false), env(quorum), 4, false, func(e expect) bool { return !e.may(Stall) }},
		{"fault-holds-commit", every2("j", false), env(quorum), 4, true, func(e expect) bool { return e.queuedBy.Equal(at(7.5)) }},
		{"fault-holds-commit", every2("j", false), env(quorumResumed), 6, true, func(e expect) bool { return e.queuedBy.Equal(at(9)) }},
		{"fault-holds-commit", every2("j", false), env(quorum), 2, false, func(e expect) bool { return e.queuedBy.Equal(at(4)) }},
		{"store-holds-commit", every2("j", false), env(held), 8, true, func(e expect) bool {
			return e.queuedBy.Equal(at(3.5).Add(EtcdCommitHold + time.Second))
		}},
		{"store-holds-commit", every2("j", false), env(held), 2, false, func(e expect) bool { return e.queuedBy.Equal(at(4)) }},
		{"failover-relaunch", every2("j", false), env(), 4, true, func(e expect) bool {
			return e.may(Relaunch) && e.relaunchBy.Equal(at(64))
		}},
		{"node-gone-relaunch", every2("j", false), env(gone), 4, true, func(e expect) bool {
			return e.relaunchBy.Equal(at(4.5).Add(nodeGoneBound + relaunchWithin))
		}},
		{"node-gone-relaunch", every2("j", false), env(gone), 8, false, func(e expect) bool { return e.relaunchBy.Equal(at(68)) }},
		{"node-gone-relaunch", every2("j", false), env(crashed), 4, true, func(e expect) bool {
			return e.relaunchBy.Equal(at(4.5).Add(nodeGoneBound + relaunchWithin))
		}},
		{"node-gone-relaunch", every2("j", false), env(crashedBackEarly), 4, true, func(e expect) bool {
			return e.relaunchBy.Equal(at(44).Add(kubeletReportLag + relaunchWithin)) // back at 44 s, ends reported by 59 s
		}},
		{"collapse-into-relaunch", every2("j", false), env(), 4, true, func(e expect) bool { return e.heldRelaunchBy.Equal(at(184)) }},
		{"collapse-into-relaunch", every2("j", true), env(), 4, false, func(e expect) bool { return e.heldRelaunchBy.IsZero() }},
		{"lost-before-start", every2("j", true), env(), 4, true, func(e expect) bool { return e.may(LostBeforeStart) }},
		{"backlog-at-end", every2("j", true), backlog, 8, true, func(e expect) bool { return e.may(Backlog) }},
		{"backlog-at-end", every2("j", true), env(), 8, false, func(e expect) bool { return !e.may(Backlog) }},
		{"backlog-at-end", changedOn, backlog, 2, false, func(e expect) bool { return !e.may(Backlog) }},
	}
	tested := map[string]bool{}
	fireOf := func(rules []expectRule, j Job, env expectEnv, s float64) expect {
		je := expectJobBy(j, env, rules)
		if je.err != nil {
			t.Fatal(je.err)
		}
		i := slices.IndexFunc(je.fires, func(e expect) bool { return e.at.Equal(at(s)) })
		if i < 0 {
			t.Fatalf("no expected fire at %v", s)
		}
		return je.fires[i]
	}
	for _, c := range cases {
		e := fireOf(expectRules, c.job, c.env, c.fire)
		if c.holds { // the case fails without its rule
			without := slices.DeleteFunc(slices.Clone(expectRules), func(r expectRule) bool { return r.name == c.rule })
			if c.check(fireOf(without, c.job, c.env, c.fire)) {
				t.Errorf("%s, fire %v: the case passes without its rule", c.rule, c.fire)
			}
		}
		if !c.check(e) {
			t.Errorf("%s (applies: %v), fire %v: got %+v", c.rule, c.holds, c.fire, e)
		}
		if got := slices.Contains(e.rules, c.rule); got != c.holds {
			t.Errorf("%s, fire %v: applied %v, want %v (rules %v)", c.rule, c.fire, got, c.holds, e.rules)
		}
		if c.holds {
			tested[c.rule] = true
		}
	}
	for _, r := range expectRules {
		if !tested[r.name] {
			t.Errorf("rule %s has no case where it applies", r.name)
		}
	}
}

// TestExpectationBacklogCount: the job's backlog is what its ready entry held at the end less the
// fires from the end to its reading, and none when its last window closed before the end.
func TestExpectationBacklogCount(t *testing.T) {
	env := expectEnv{slack: time.Second, end: at(10), pending: 3, pendingAt: at(12.5)}
	if got := expectJob(every2("j", true), env).backlog; got != 1 { // 3 less the fires of 10 and 12
		t.Errorf("backlog %d, want 1", got)
	}
	closed := every2("j", true)
	closed.Windows[0].To = at(8)
	if got := expectJob(closed, env).backlog; got != 0 {
		t.Errorf("backlog of a job closed before the end %d, want 0", got)
	}
	if got := expectJob(every2("j", false), env).backlog; got != 0 {
		t.Errorf("backlog of a misfire=false job %d, want 0", got)
	}
}

// TestExpectationEdgeFires: the fires within slack of a window's edges are not expected but listed
// as edge fires, and a change answered late makes the fires from its sending to its answer edge
// fires too.
func TestExpectationEdgeFires(t *testing.T) {
	j := Job{Name: "j", Windows: []Window{{From: at(1.5), Opening: at(1.5), To: at(6), Closing: at(9), Cron: "*/2 * * * * ?"}}}
	je := expectJob(j, expectEnv{slack: time.Second, end: at(20)})
	var exp, edge []float64
	for _, e := range je.fires {
		exp = append(exp, e.at.Sub(t0).Seconds())
	}
	for _, f := range je.edge {
		edge = append(edge, f.at.Sub(t0).Seconds())
	}
	if !slices.Equal(exp, []float64{4}) || !slices.Equal(edge, []float64{2, 6, 8}) {
		t.Errorf("expected %v edge %v, want [4] and [2 6 8]", exp, edge)
	}
}

// PrintExpectations lists a job's expected fires with their fates and the rules behind them, and
// refuses a job the workload does not have or a DAEMON job.
func TestPrintExpectations(t *testing.T) {
	d := every2("d", false)
	d.Daemon = true
	in := Input{Jobs: []Job{every2("j", false), d}, End: at(10), Faults: []Fault{{Kind: "pause-leader", Start: at(3.5), End: at(6.5)}}}
	var b strings.Builder
	if err := PrintExpectations(&b, in, "j"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"job j (misfire=false): 4 fires expected", "00:00:04.000 fates own-run,collapse,catch-up,stall,relaunch,lost-before-start; queued from 23:59:59.000 by 00:00:07.500",
		"rules own-execution,staged-ahead,collapse,catch-up,stall,fault-holds-commit,", "00:00:10.000 edge fire"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
	if err := PrintExpectations(&b, in, "nope"); err == nil || !strings.Contains(err.Error(), `no job "nope"`) {
		t.Errorf("unknown job: %v", err)
	}
	if err := PrintExpectations(&b, in, "d"); err == nil || !strings.Contains(err.Error(), "DAEMON") {
		t.Errorf("daemon job: %v", err)
	}
}

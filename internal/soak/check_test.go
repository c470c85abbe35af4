package soak

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak/runlog"
	"github.com/ejcloud/elasticjob/jobs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// logOf builds a run log: each run is a start (queued at its fire, by a
// term) and an end 0.5 s later.
type runSpec struct {
	task      string
	job       string
	item      int
	queued    float64
	start     float64
	dur       float64 // 0: 0.5 s; <0: no end
	source    string
	term      int64
	param     string
	failedEnd bool
	nominal   float64 // the cron instant the execution serves (0: none recorded)
	state     string  // the end's state ("": TASK_FINISHED, or TASK_FAILED with failedEnd)
}

func logOf(specs ...runSpec) []runlog.Line {
	var out []runlog.Line
	for _, s := range specs {
		src := s.source
		if src == "" {
			src = "NORMAL_TRIGGER"
		}
		term := s.term
		var nominal time.Time
		if s.nominal != 0 {
			nominal = at(s.nominal)
		}
		out = append(out, runlog.Line{Ev: runlog.Start, At: at(s.start), Task: s.task, Job: s.job, Item: s.item, Source: src,
			Term: &term, Queued: at(s.queued), Nominal: nominal, Param: s.param})
		d := s.dur
		if d == 0 {
			d = 0.5
		}
		if d > 0 {
			st := "TASK_FINISHED"
			if s.failedEnd {
				st = "TASK_FAILED"
			}
			if s.state != "" {
				st = s.state
			}
			out = append(out, runlog.Line{Ev: runlog.End, At: at(s.start + d), Task: s.task, State: st})
		}
	}
	return out
}

// every2 is a job firing every 2 s over [0, 10]: fires at 2, 4, 6, 8 (the
// slack keeps the edges out).
func every2(name string, misfire bool) Job {
	return Job{Name: name, Shards: 1, Misfire: misfire, Windows: []Window{{From: at(0), To: at(10), Cron: "*/2 * * * * ?"}}}
}

func clean(job string) []runSpec {
	var out []runSpec
	for i, f := range []float64{2, 4, 6, 8} {
		out = append(out, runSpec{task: job + string(rune('a'+i)), job: job, queued: f, start: f + 0.01})
	}
	return out
}

func TestCheckCleanLogHasNoAnomaly(t *testing.T) {
	for _, misfire := range []bool{false, true} {
		rep := Check(Input{Runs: logOf(clean("j")...), Jobs: []Job{every2("j", misfire)}})
		if len(rep.Anomalies) != 0 || rep.Runs != 4 || rep.Fires != 4 {
			t.Errorf("misfire=%v: %+v", misfire, rep)
		}
	}
}

// A fire whose launch failed before its task started
// (the term ended during the launch) ran at once as FAILOVER, and the
// fires after it were replayed as MISFIRE executions. Matched greedily, the
// first fire took the next fire's MISFIRE execution, and so on, and the
// last fire was reported lost though every fire ran once; the fires match
// one to one (the FAILOVER relaunch for its own fire). A MISFIRE execution
// missing from the same log is still a lost fire.
func TestCheckMatchesAFailoverRelaunchBeforeTheMisfireBacklog(t *testing.T) {
	runs := []runSpec{
		{task: "ja", job: "j", queued: 2, start: 2.01},                     // fire 2
		{task: "jb", job: "j", queued: 4.9, start: 5, source: "FAILOVER"},  // fire 4, relaunched
		{task: "jc", job: "j", queued: 6.5, start: 6.6, source: "MISFIRE"}, // fire 6, replayed
		{task: "jd", job: "j", queued: 8.5, start: 8.6, source: "MISFIRE"}, // fire 8, replayed
	}
	rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{every2("j", true)}})
	if len(rep.Anomalies) != 0 || rep.Fires != 4 {
		t.Errorf("every fire ran once: %+v", rep)
	}
	rep = Check(Input{Runs: logOf(runs[:3]...), Jobs: []Job{every2("j", true)}})
	if k := rep.ByKind(); len(rep.Anomalies) != 1 || k[LostFire] != 1 {
		t.Errorf("a replay missing: want one lost fire, got %v", rep.Anomalies)
	}
}

// A misfire=true backlog a long outage left may not have drained when the
// soak stops (one execution per fire, one at a time, after a 46 s
// quorum loss): the executions still in the job's ready entry at the end
// stand for its last fires, less the fires after the end; more lost fires
// than that are still lost.
func TestCheckCountsABacklogPendingAtTheEnd(t *testing.T) {
	job := every2("j", true)
	job.Windows[0].To = at(10)
	runs := logOf(clean("j")[:2]...) // fires 2 and 4 ran, 6 and 8 wait
	in := Input{Runs: runs, Jobs: []Job{job}, End: at(10), Pending: map[string]int{"j": 4}, PendingAt: at(13)}
	rep := Check(in)
	if len(rep.Anomalies) != 0 || rep.Pending != 2 {
		t.Errorf("4 pending at 13 s, two of them the fires at 10 s (the edge) and 12 s: want fires 6 and 8 pending, got %d pending, %v", rep.Pending, rep.Anomalies)
	}
	in.Pending["j"] = 3 // fire 6 lost
	rep = Check(in)
	if k := rep.ByKind(); rep.Pending != 1 || k[LostFire] != 1 || !strings.Contains(rep.Anomalies[0].Detail, "00:00:06") {
		t.Errorf("want fire 8 pending and fire 6 lost, got %d pending, %v", rep.Pending, rep.Anomalies)
	}
	in.Pending = nil
	if rep = Check(in); rep.ByKind()[LostFire] != 2 {
		t.Errorf("no queue read: want both lost, got %v", rep.Anomalies)
	}
}

// Each hand-made log holds one anomaly; the checker must name it.
func TestCheckFindsEachAnomaly(t *testing.T) {
	base := clean("j")
	with := func(extra ...runSpec) []runSpec { return append(append([]runSpec(nil), base...), extra...) }
	without := func(i int) []runSpec { return append(append([]runSpec(nil), base[:i]...), base[i+1:]...) }
	keyed := Job{Name: "k", Shards: 1, Keys: []string{"K1"}}
	long := every2("j", false)
	long.Windows[0].To = at(30)
	cases := []struct {
		name  string
		in    Input
		want  string
		count int
	}{
		{"a task id started twice", Input{Runs: logOf(with(runSpec{task: "ja", job: "j", queued: 2, start: 3})...), Jobs: []Job{every2("j", false)}}, DuplicateTask, 1},
		{"a fire's shard run twice", Input{Runs: logOf(with(runSpec{task: "jz", job: "j", queued: 4, start: 4.8})...), Jobs: []Job{every2("j", false)}}, DuplicateFire, 1},
		{"a shard running twice at once", Input{Runs: logOf(with(runSpec{task: "jz", job: "j", queued: 5, start: 6.2, source: "MISFIRE", dur: 0.1})...), Jobs: []Job{every2("j", true)}}, Overlap, 1},
		{"a misfire=false fire lost", Input{Runs: logOf(without(1)...), Jobs: []Job{every2("j", false)}}, LostFire, 1},
		{"a misfire=true fire lost", Input{Runs: logOf(without(2)...), Jobs: []Job{every2("j", true)}}, LostFire, 1},
		{"an execution no fire explains", Input{Runs: logOf(with(runSpec{task: "jz", job: "j", queued: 5, start: 5.1})...), Jobs: []Job{every2("j", true)}}, ExtraRun, 1},
		{"two executions for one misfire=false fire", Input{Runs: logOf(with(runSpec{task: "jz", job: "j", queued: 4.7, start: 4.8})...), Jobs: []Job{every2("j", false)}}, ExtraRun, 1},
		{"a trigger key run twice", Input{Runs: logOf(runSpec{task: "k1", job: "k", queued: 1, start: 1, param: "out 0 K1"}, runSpec{task: "k2", job: "k", queued: 3, start: 3, param: "out 0 K1"}), Jobs: []Job{keyed}}, DuplicateKey, 1},
		{"an accepted trigger never run", Input{Runs: nil, Jobs: []Job{keyed}}, LostTrigger, 1},
		{"a launch by a deposed term", Input{Runs: logOf(runSpec{task: "ja", job: "j", queued: 2, start: 2, term: 7}, runSpec{task: "jb", job: "j", queued: 4, start: 4, term: 9},
			runSpec{task: "jc", job: "j", queued: 6, start: 6, term: 7}, runSpec{task: "jd", job: "j", queued: 8, start: 8, term: 9}), Jobs: []Job{every2("j", false)}}, StaleTerm, 1},
		{"no fire after the heal", Input{Runs: logOf(base[:2]...), Jobs: []Job{long}, Faults: []Fault{{Kind: "kill-leader", Start: at(4.6), End: at(5)}}}, NoFireAfter, 1},
		{"a run missing from history", Input{Runs: logOf(base...), Jobs: []Job{every2("j", false)}, History: map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}}}, HistoryMissing, 1},
		{"a run twice in history", Input{Runs: logOf(base...), Jobs: []Job{every2("j", false)}, History: map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}, "jd": {{Success: true}, {Success: true}}}}, HistoryMissing, 1},
		{"a failed run recorded as a success", Input{Runs: logOf(append(base[:3:3], runSpec{task: "jd", job: "j", queued: 8, start: 8, failedEnd: true})...), Jobs: []Job{every2("j", false)},
			History: map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}, "jd": {{Success: true}}}}, HistoryWrong, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := Check(c.in)
			if got := rep.ByKind()[c.want]; got != c.count {
				t.Errorf("%s: %d, want %d; anomalies: %v", c.want, got, c.count, rep.Anomalies)
			}
		})
	}
}

// The documented misfire rules account for fires without their own run.
func TestCheckAccountsForTheMisfireRules(t *testing.T) {
	cases := []struct {
		name    string
		misfire bool
		runs    []runSpec
	}{
		// misfire=false: the run of fire 2 lasts past 4 and 6; they collapse into it
		{"collapsed into a running execution", false, []runSpec{{task: "a", job: "j", queued: 2, start: 2, dur: 4.5}, {task: "b", job: "j", queued: 8, start: 8}}},
		// misfire=false: no leader from 3 to 7; the takeover's catch-up queues one MISFIRE execution
		{"collapsed into a catch-up", false, []runSpec{{task: "a", job: "j", queued: 2, start: 2}, {task: "b", job: "j", queued: 7, start: 7.2, source: "MISFIRE"}, {task: "c", job: "j", queued: 8, start: 8}}},
		// misfire=true: fires 4 and 6 replayed by the catch-up as two MISFIRE executions
		{"replayed by a catch-up", true, []runSpec{{task: "a", job: "j", queued: 2, start: 2}, {task: "b", job: "j", queued: 7, start: 7.1, source: "MISFIRE", dur: 0.2},
			{task: "c", job: "j", queued: 7.3, start: 7.4, source: "MISFIRE", dur: 0.2}, {task: "d", job: "j", queued: 8, start: 8}}},
		// fires committed after their instant are queued at the commit
		{"late commits", true, []runSpec{{task: "a", job: "j", queued: 2.3, start: 2.4}, {task: "b", job: "j", queued: 4, start: 4}, {task: "c", job: "j", queued: 6.9, start: 7},
			{task: "d", job: "j", queued: 8.01, start: 8.02}}},
		// misfire=false: fire 4 collapses into the trigger pending from 3.5 to 4.5
		{"collapsed into a pending trigger", false, []runSpec{{task: "a", job: "j", queued: 2, start: 2}, {task: "t", job: "j", queued: 3.5, start: 4.5, param: "soak 0 K"},
			{task: "c", job: "j", queued: 6, start: 6}, {task: "d", job: "j", queued: 8, start: 8}}},
		// misfire=true: fire 6, staged at 5.5 into the entry of fire 4 still
		// pending, is queued when that one launches (5.6)
		{"staged into a pending entry", true, []runSpec{{task: "a", job: "j", queued: 2, start: 2}, {task: "b", job: "j", queued: 4, start: 5.6, dur: 0.5},
			{task: "c", job: "j", queued: 5.6, start: 6.1, source: "MISFIRE"}, {task: "d", job: "j", queued: 8, start: 8}}},
		// the run of fire 4 never started (its agent died): it runs again as FAILOVER
		{"a relaunch of a task that never started", false, []runSpec{{task: "a", job: "j", queued: 2, start: 2}, {task: "b2", job: "j", queued: 5, start: 5.5, source: "FAILOVER"},
			{task: "c", job: "j", queued: 6, start: 6}, {task: "d", job: "j", queued: 8, start: 8}}},
		// a failover re-runs a shard of the same execution: not a duplicate
		{"a failover of a lost run", false, []runSpec{{task: "a", job: "j", queued: 2, start: 2, dur: -1}, {task: "a2", job: "j", queued: 2.5, start: 2.6, source: "FAILOVER"},
			{task: "b", job: "j", queued: 4, start: 4}, {task: "c", job: "j", queued: 6, start: 6}, {task: "d", job: "j", queued: 8, start: 8}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if rep := Check(Input{Runs: logOf(c.runs...), Jobs: []Job{every2("j", c.misfire)}}); len(rep.Anomalies) != 0 {
				t.Errorf("anomalies: %v", rep.Anomalies)
			}
		})
	}
}

// A configuration change clears a pending execution (docs/jobs.md): a
// fire pending when its window closed by a change is accounted for; the
// same fire in a window the run's end closed is lost.
func TestCheckFireClearedByAChange(t *testing.T) {
	j := every2("j", false)
	j.Windows = []Window{{From: at(0), To: at(6.5), Cron: "*/2 * * * * ?"}, {From: at(7), To: at(12), Cron: "*/2 * * * * ?"}}
	runs := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "c", job: "j", queued: 8, start: 8}, runSpec{task: "d", job: "j", queued: 10, start: 10})
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(12)}); len(rep.Anomalies) != 0 {
		t.Errorf("fire 4, pending when the update at 6.5 came, was cleared: %v", rep.Anomalies)
	}
	j.Windows = []Window{{From: at(0), To: at(12), Cron: "*/2 * * * * ?"}}
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(12)}); rep.ByKind()[LostFire] != 2 {
		t.Errorf("fires 4 and 6 without a change are lost: %v", rep.Anomalies)
	}
}

// The stall rule (docs/jobs.md): a misfire=false job's fires while the
// leader is paused collapse into its late fire, and are counted; a
// misfire=true job replays each, so a fire of the pause without its run is
// lost (the rule, not a pause's excuse).
func TestCheckStallRule(t *testing.T) {
	pause := []Fault{{Kind: "pause-leader", Start: at(3), End: at(6.1)}}
	runs := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "c", job: "j", queued: 6.2, start: 6.3}, runSpec{task: "d", job: "j", queued: 8, start: 8})
	if rep := Check(Input{Runs: runs, Jobs: []Job{every2("j", false)}, Faults: pause}); len(rep.Anomalies) != 0 {
		t.Errorf("misfire=false: fire 4 collapsed while paused: %v", rep.Anomalies)
	}
	rep := Check(Input{Runs: runs, Jobs: []Job{every2("j", true)}, Faults: pause})
	if rep.ByKind()[LostFire] != 1 || rep.Stalled != 0 {
		t.Errorf("misfire=true: fire 4 not replayed after the pause is lost: stalled %d, %v", rep.Stalled, rep.Anomalies)
	}
	replayed := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "b", job: "j", queued: 6.2, start: 6.3},
		runSpec{task: "c", job: "j", queued: 6.3, start: 6.9, source: "MISFIRE"}, runSpec{task: "d", job: "j", queued: 8, start: 8})
	if rep := Check(Input{Runs: replayed, Jobs: []Job{every2("j", true)}, Faults: pause}); len(rep.Anomalies) != 0 {
		t.Errorf("misfire=true: fires 4 and 6 replayed after the pause: %v", rep.Anomalies)
	}
	rep = Check(Input{Runs: runs, Jobs: []Job{every2("j", true)}, Faults: []Fault{{Kind: "kill-leader", Start: at(3), End: at(6.1)}}})
	if rep.ByKind()[LostFire] != 1 {
		t.Errorf("misfire=true, without a pause: fire 4 is lost: %v", rep.Anomalies)
	}
}

// A misfire=false fire whose launch was rolled back (its ACCEPT failed:
// the agents were killed) is queued again as a misfire behind the next
// fire's execution, pending by then, and runs right after it (a fire of
// 08:59:12 that ran at :16.05, queued :15.43, behind the fire of :15).
func TestCheckFireRequeuedBehindTheNextFire(t *testing.T) {
	runs := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "c", job: "j", queued: 6, start: 6.1},
		runSpec{task: "d", job: "j", queued: 6.4, start: 6.9, source: "MISFIRE"}, runSpec{task: "e", job: "j", queued: 8, start: 8})
	if rep := Check(Input{Runs: runs, Jobs: []Job{every2("j", false)}}); len(rep.Anomalies) != 0 {
		t.Errorf("fire 4 ran requeued behind fire 6: %v", rep.Anomalies)
	}
	far := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "c", job: "j", queued: 6, start: 6.1},
		runSpec{task: "e", job: "j", queued: 8, start: 8}, runSpec{task: "d", job: "j", queued: 12, start: 12.5, source: "MISFIRE"},
		runSpec{task: "f", job: "j", queued: 10, start: 10}, runSpec{task: "g", job: "j", queued: 12.1, start: 12.1})
	if rep := Check(Input{Runs: far, Jobs: []Job{every2("j", false)}, End: at(13)}); rep.ByKind()[LostFire] != 1 {
		t.Errorf("a misfire run long after the next fire does not stand for fire 4: %v", rep.Anomalies)
	}
}

// A misfire=false fire collapses into an execution pending at its
// instant whose launch never started and ran as a FAILOVER relaunch; with
// an on-time execution started in between, the fire is lost.
func TestCheckFireCollapsesIntoANeverStartedRelaunch(t *testing.T) {
	j := every2("j", false)
	j.Windows[0].To = at(20)
	after := []runSpec{{task: "c", job: "j", queued: 10, start: 11}, {task: "d", job: "j", queued: 12, start: 12}, {task: "e", job: "j", queued: 14, start: 14},
		{task: "f", job: "j", queued: 16, start: 16}, {task: "g", job: "j", queued: 18, start: 18}}
	runs := logOf(append([]runSpec{{task: "a", job: "j", queued: 2, start: 2}, {task: "b", job: "j", queued: 9.8, start: 10.1, source: "FAILOVER"}}, after...)...)
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(20)}); len(rep.Anomalies) != 0 {
		t.Errorf("fires 4-8 collapsed into the execution relaunched at 10.1: %v", rep.Anomalies)
	}
	runs = logOf(append([]runSpec{{task: "a", job: "j", queued: 2, start: 2}, {task: "x", job: "j", queued: 8, start: 8.1},
		{task: "b", job: "j", queued: 9.8, start: 10.1, source: "FAILOVER"}}, after...)...)
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(20)}); rep.ByKind()[LostFire] != 1 {
		t.Errorf("fire 4 takes the relaunch; fire 6, with an on-time run at 8.1 before it, is lost: %v", rep.Anomalies)
	}
}

func TestReportPrintsFaultsRunsAnomaliesAndSeed(t *testing.T) {
	long := every2("j", false)
	long.Windows[0].To = at(30)
	rep := Check(Input{Runs: logOf(clean("j")[:2]...), Jobs: []Job{long}, Faults: []Fault{{Kind: "kill-leader", Start: at(4.6), End: at(5)}}})
	var b bytes.Buffer
	rep.Print(&b, 42, []Fault{{Kind: "kill-leader"}, {Kind: "kill-leader"}, {Kind: "sigstop-leader"}})
	for _, want := range []string{"seed 42", "faults: 3 {kill-leader=2 sigstop-leader=1}", "runs checked: 2", "lost-fire=", "no-fire-after-heal=1", "fire lateness under faults"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

// Runs ending just before history was read are not held against it.
func TestCheckHistoryLag(t *testing.T) {
	hist := map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}}
	in := Input{Runs: logOf(clean("j")...), Jobs: []Job{every2("j", false)}, History: hist, HistoryAt: at(9)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("jd ended at 8.51, 0.49 s before history was read: %v", rep.Anomalies)
	}
	in.HistoryAt = at(20)
	if rep := Check(in); rep.ByKind()[HistoryMissing] != 1 {
		t.Errorf("jd ended 11.5 s before history was read: %v", rep.Anomalies)
	}
}

// A DAEMON task is not one execution in history: its rows are the runs its
// executor reports (none from the simulated agents, several from a real
// one), so the embedded soak's daemon tasks, launched at every scheduler
// start, are not held against history (every daemon job's tasks would
// be history-missing). A transient job's run still is.
func TestCheckHistoryLeavesDaemonTasksOut(t *testing.T) {
	daemon := Job{Name: "d", Shards: 1, Daemon: true}
	runs := append(clean("j"), runSpec{task: "d1", job: "d", queued: 2, start: 2.1, dur: 1})
	hist := map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}, "jd": {{Success: true}}}
	in := Input{Runs: logOf(runs...), Jobs: []Job{every2("j", false), daemon}, History: hist, HistoryAt: at(30)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("a daemon task without an execution row: %v", rep.Anomalies)
	}
	hist["d1"] = []Outcome{{Success: true}, {Success: true}}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("a daemon task with two runs in history: %v", rep.Anomalies)
	}
	delete(hist, "jd")
	if rep := Check(in); rep.ByKind()[HistoryMissing] != 1 {
		t.Errorf("a transient run missing from history: %v", rep.Anomalies)
	}
}

// A fire within the slack of a window's end is not expected, but it may
// run, and when it was staged ahead into a pending entry its execution is
// queued inside the window (else two unexplained runs). It explains one execution, not two.
func TestCheckEdgeFireStagedAhead(t *testing.T) {
	j := every2("j", true)
	j.Windows[0].To = at(10.64) // a change at 10.64 closed the window
	runs := append(clean("j"), runSpec{task: "jm", job: "j", queued: 9.109, start: 10.607, source: "MISFIRE", dur: 0.01})
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(30)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the 10 s fire staged at 9.109: %v", rep.Anomalies)
	}
	runs = append(runs, runSpec{task: "jn", job: "j", queued: 9.2, start: 10.62, source: "MISFIRE", dur: 0.01})
	in.Runs = logOf(runs...)
	if rep := Check(in); rep.ByKind()[ExtraRun] != 1 {
		t.Errorf("two executions for the one edge fire: %v", rep.Anomalies)
	}
}

// A run that ended just before the agents were killed may be a failure in
// history (its update died with the agent); one that ended earlier may not.
func TestCheckHistoryUpdateLostWithTheAgent(t *testing.T) {
	hist := map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}, "jd": {{Success: false}}}
	in := Input{Runs: logOf(clean("j")...), Jobs: []Job{every2("j", false)}, History: hist, HistoryAt: at(30),
		Faults: []Fault{{Kind: "agents-killed", Start: at(8.518), End: at(9.5)}}} // jd ended at 8.51
	if got := Check(in).ByKind()[HistoryWrong]; got != 0 {
		t.Errorf("jd ended 8 ms before the agents were killed: %d history-outcome", got)
	}
	in.Faults[0].Start = at(9.6)
	if got := Check(in).ByKind()[HistoryWrong]; got != 1 {
		t.Errorf("jd ended 1.09 s before the agents were killed: %d history-outcome, want 1", got)
	}
	// the leader's agent link losing packets as jd ended holds its update
	// up to the longest stall after the fault healed
	in.Faults = []Fault{{Kind: "leader-agents-loss", Start: at(8), End: at(9)}, {Kind: "agents-killed", Start: at(15.5), End: at(16)}}
	if got := Check(in).ByKind()[HistoryWrong]; got != 0 {
		t.Errorf("jd ended on a lossy agent link 6.5 s before the agents were killed: %d history-outcome", got)
	}
	in.Faults[1].Start = at(25)
	if got := Check(in).ByKind()[HistoryWrong]; got != 1 {
		t.Errorf("jd ended 16 s before the agents were killed: %d history-outcome, want 1", got)
	}
}

// Real Mesos: a disable sent at 9.0 while jd ran (8.01 to
// 8.51 in the run log, here 8.01 to 9.2) killed it; its script had
// already exited 0 and recorded TASK_FINISHED, the executor reported
// TASK_KILLED. A run that ended before the change was sent, or began
// after it was answered, is held to its recorded end.
func TestCheckHistoryKilledByAChange(t *testing.T) {
	runs := clean("j")
	runs[3].dur = 1.19 // jd: 8.01 to 9.2
	hist := map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}, "jd": {{Success: false}}}
	j := every2("j", false)
	j.Windows[0].To, j.Windows[0].Closing = at(9), at(9.1)
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, History: hist, HistoryAt: at(30)}
	if got := Check(in).ByKind()[HistoryWrong]; got != 0 {
		t.Errorf("jd running when the disable was sent: %d history-outcome", got)
	}
	j.Windows[0].To, j.Windows[0].Closing = at(9.41), at(9.5) // the script's end 0.21 s before the change
	in.Jobs = []Job{j}
	if got := Check(in).ByKind()[HistoryWrong]; got != 0 {
		t.Errorf("jd ended 0.21 s before the disable was sent: %d history-outcome", got)
	}
	j.Windows[0].To, j.Windows[0].Closing = at(10.3), at(10.4)
	in.Jobs = []Job{j}
	if got := Check(in).ByKind()[HistoryWrong]; got != 1 {
		t.Errorf("jd ended 1.1 s before the disable was sent: %d history-outcome, want 1", got)
	}
	j.Windows[0].To, j.Windows[0].Closing = at(9), time.Time{} // the workload's end, no change
	in.Jobs = []Job{j}
	if got := Check(in).ByKind()[HistoryWrong]; got != 1 {
		t.Errorf("no change closed the window: %d history-outcome, want 1", got)
	}
}

// Real Mesos, a misfire=false job: its run ended at 46.5 in
// the run log, its agent was lost at 46.63 with the executor that held
// the end's update, so the scheduler took the run as running until it
// counted it lost (UnreachableBound): the fires meanwhile collapse into
// it; the first fire after the bound is expected again.
func TestCheckFiresCollapseIntoARunLostWithItsAgent(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(60), Cron: "*/2 * * * * ?"}}}
	runs := []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01, dur: 0.5}} // ended 2.51
	for i, f := range []float64{36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58} {
		runs = append(runs, runSpec{task: "jr" + string(rune('a'+i)), job: "j", queued: f, start: f + 0.01})
	}
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(70),
		Faults: []Fault{{Kind: AgentLost, Start: at(2.6), End: at(12)}}}
	rep := Check(in)
	if got := rep.ByKind()[LostFire]; got != 0 {
		t.Errorf("fires 4-32 s, while the lost run counted as running until 33.6: %v", rep.Anomalies)
	}
	in.Runs = logOf(append(runs[:1:1], runs[2:]...)...) // the 36 s fire did not run
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("the fire at 36 s, after the bound, did not run: %d lost-fire, want 1", got)
	}
	in.Runs, in.Faults[0].Kind = logOf(runs...), AgentKilled // the executor lives on: its update comes
	if got := Check(in).ByKind()[LostFire]; got == 0 {
		t.Errorf("fires 4-32 s lost after an agent-killed: no lost-fire")
	}
}

// After a lost agent, a job whose task was on it fires again only once
// the task is counted lost: the heal bound counts from then.
func TestCheckHealAfterALostAgentCountsFromTheBound(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(80), Cron: "*/2 * * * * ?"}}}
	runs := []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01, dur: -1}, {task: "jb", job: "j", queued: 34, start: 34.01}}
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(40), Faults: []Fault{{Kind: AgentLost, Start: at(2.6), End: at(12)}}}
	if got := Check(in).ByKind()[NoFireAfter]; got != 0 {
		t.Errorf("the job fired at 34 s, its first fire after the task counted lost (33.6 s): %d no-fire-after-heal", got)
	}
	in.Faults[0].Kind = AgentKilled
	if got := Check(in).ByKind()[NoFireAfter]; got != 1 {
		t.Errorf("after an agent-killed healed at 12 s the job must fire by 19 s: %d no-fire-after-heal, want 1", got)
	}
}

// On real Mesos a lost agent takes its executors along, and with them the
// update of a run that had just ended (agent-lost): as above.
func TestCheckHistoryUpdateLostWithALostAgent(t *testing.T) {
	hist := map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}, "jd": {{Success: false}}}
	in := Input{Runs: logOf(clean("j")...), Jobs: []Job{every2("j", false)}, History: hist, HistoryAt: at(30),
		Faults: []Fault{{Kind: AgentLost, Start: at(8.6), End: at(20)}}} // jd ended at 8.51
	if got := Check(in).ByKind()[HistoryWrong]; got != 0 {
		t.Errorf("jd ended 90 ms before its agent was lost: %d history-outcome", got)
	}
	for _, k := range []string{AgentKilled, MasterKilled} { // the executor lives on and sends it again
		in.Faults[0].Kind = k
		if got := Check(in).ByKind()[HistoryWrong]; got != 1 {
			t.Errorf("jd ended 90 ms before %s: %d history-outcome, want 1", k, got)
		}
	}
}

// On the etcd shape every scheduler keeps its own copy of history: each
// copy is checked, and an anomaly names the replica it was found in.
func TestCheckHistoryEachReplica(t *testing.T) {
	full := map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}, "jd": {{Success: true}}}
	short := map[string][]Outcome{"ja": {{Success: true}}, "jb": {{Success: true}}, "jc": {{Success: true}}}
	in := Input{Runs: logOf(clean("j")...), Jobs: []Job{every2("j", false)}, HistoryAt: at(30),
		Replicas: map[string]map[string][]Outcome{"s1": full, "s2": short, "s3": full}}
	rep := Check(in)
	if got := rep.ByKind()[HistoryMissing]; got != 1 || !strings.Contains(rep.Anomalies[0].Detail, "replica s2: task jd") {
		t.Fatalf("s2 lacks jd: want one history-missing naming s2, got %v", rep.Anomalies)
	}
	in.Replicas["s2"] = full
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("every replica complete: %v", rep.Anomalies)
	}
}

// A misfire=true job (*/4) on ZooKeeper: an enable sent at 17 under
// 200 ms of delay on the leader's ZooKeeper links was answered at 20.054
// but had landed before 20; the leader lost its lease at the 20 s commit,
// and the next term's catch-up at 24.5 queued the 20 s fire and the 24 s
// one as MISFIRE executions. The fire at 20 is an edge fire from the
// change's sending on: it explains one execution, not two.
func TestCheckChangeAnsweredLate(t *testing.T) {
	job := Job{Name: "k", Shards: 1, Misfire: true, Windows: []Window{
		{From: at(0), To: at(10), Cron: "*/4 * * * * ?"},
		{From: at(20.054), To: at(30), Opening: at(17), Cron: "*/4 * * * * ?"},
	}}
	runs := []runSpec{
		{task: "k4", job: "k", queued: 4, start: 4}, {task: "k8", job: "k", queued: 8, start: 8},
		{task: "k20", job: "k", queued: 24.49, start: 24.9, source: "MISFIRE"},
		{task: "k24", job: "k", queued: 24.54, start: 25.6, source: "MISFIRE"},
		{task: "k28", job: "k", queued: 28, start: 28},
	}
	in := Input{Runs: logOf(runs...), Jobs: []Job{job}, End: at(30)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the 20 s fire landed after the enable was sent: %v", rep.Anomalies)
	}
	in.Jobs[0].Windows[1].Opening = time.Time{}
	if got := Check(in).ByKind()[ExtraRun]; got != 1 {
		t.Errorf("without the sending time, one execution matches no fire: got %d unexplained", got)
	}
	in.Jobs[0].Windows[1].Opening = at(17)
	in.Runs = logOf(append(runs, runSpec{task: "kx", job: "k", queued: 24.6, start: 26.3, source: "MISFIRE"})...)
	if got := Check(in).ByKind()[ExtraRun]; got != 1 {
		t.Errorf("a third MISFIRE execution: the edge fire explains one, got %d unexplained", got)
	}
}

// A misfire=false job on etcd: the fires during a quorum loss
// (healed at 8.7) were caught up by the next term before its first launch
// (10.9) and collapsed into a manual trigger pending then (queued 10.254):
// accounted for. Had no newer term launched (the same leader going on),
// they would be lost.
func TestCheckCatchUpCollapsesIntoAPendingTrigger(t *testing.T) {
	job := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(20), Cron: "*/2 * * * * ?"}}, Keys: []string{"K1"}}
	runs := func(newTerm int64) []runSpec {
		return []runSpec{
			{task: "j2", job: "j", queued: 2, start: 2, term: 1}, {task: "j4", job: "j", queued: 4, start: 4, term: 1},
			{task: "jk", job: "j", queued: 10.254, start: 10.9, term: newTerm, param: "soak 0 K1"},
			{task: "j12", job: "j", queued: 12, start: 12, term: newTerm}, {task: "j14", job: "j", queued: 14, start: 14, term: newTerm},
			{task: "j16", job: "j", queued: 16, start: 16, term: newTerm}, {task: "j18", job: "j", queued: 18, start: 18, term: newTerm},
		}
	}
	faults := []Fault{{Kind: "etcd-quorum-lost", Start: at(5), End: at(8.7)}}
	in := Input{Runs: logOf(runs(2)...), Jobs: []Job{job}, Faults: faults, End: at(20)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the fires of 6 and 8 collapsed into the trigger pending at the new term's catch-up: %v", rep.Anomalies)
	}
	in.Runs = logOf(runs(1)...)
	if got := Check(in).ByKind()[LostFire]; got != 2 {
		t.Errorf("no newer term: the fires of 6 and 8 are lost, got %d lost", got)
	}
}

// A misfire=false job on etcd (every 3 s): a disable sent at 11.08
// (answered at 11.5) closed the window; the fire of 12, staged before the
// disable landed, stayed in the ready entry and started at 104 once an
// enable sent at 103 brought the job back. A disable clears what is
// pending: a stale run. Started before the enable was sent it is not
// (the launcher's round racing the disable), nor across an update.
func TestCheckStaleRunAfterADisable(t *testing.T) {
	job := Job{Name: "s", Shards: 1, Windows: []Window{
		{From: at(0), To: at(11.08), Closing: at(11.5), Cron: "*/3 * * * * ?"},
		{From: at(103.5), To: at(120), Opening: at(103), Cron: "*/3 * * * * ?"},
	}}
	base := []runSpec{
		{task: "s3", job: "s", queued: 3, start: 3}, {task: "s6", job: "s", queued: 6, start: 6}, {task: "s9", job: "s", queued: 9, start: 9},
		{task: "s105", job: "s", queued: 105, start: 105}, {task: "s108", job: "s", queued: 108, start: 108},
		{task: "s111", job: "s", queued: 111, start: 111}, {task: "s114", job: "s", queued: 114, start: 114}, {task: "s117", job: "s", queued: 117, start: 117},
	}
	in := Input{Runs: logOf(append(base, runSpec{task: "s12", job: "s", queued: 12, start: 104})...), Jobs: []Job{job}, End: at(120)}
	rep := Check(in)
	if rep.ByKind()[StaleRun] != 1 || len(rep.Anomalies) != 1 {
		t.Errorf("the fire of 12 started after the enable: %v", rep.Anomalies)
	}
	in.Runs = logOf(append(base, runSpec{task: "s12", job: "s", queued: 12, start: 12.01})...)
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the fire of 12 started at once, before the disable landed: %v", rep.Anomalies)
	}
	in.Runs = logOf(append(base, runSpec{task: "s12", job: "s", queued: 12, start: 104})...)
	in.Jobs[0].Windows[1].Opening = at(11.08) // an update: one change closes and opens
	in.Jobs[0].Windows[1].From = at(11.5)
	in.Jobs[0].Windows[0].Closing = time.Time{}
	if got := Check(in).ByKind()[StaleRun]; got != 0 {
		t.Errorf("an update does not take the job off: %v", Check(in).Anomalies)
	}
}

// A misfire=false job on etcd (every 10 s, 2 shards): the trigger
// k223, sent at 57.5, was launched at 58.96 by a term that lapsed before
// its ACCEPT; reconciliation found its tasks unknown and they ran again as
// FAILOVER (queued 61.822, started 65.5). The fire of 60 collapsed into
// it: accounted for once the trigger's sending is known, lost without.
func TestCheckFireCollapsesIntoATriggerRelaunchedBeforeItsStart(t *testing.T) {
	job := Job{Name: "d", Shards: 1, Windows: []Window{{From: at(35), To: at(80), Cron: "*/10 * * * * ?"}}, Keys: []string{"k223-d"}}
	runs := logOf(
		runSpec{task: "d40", job: "d", queued: 40, start: 40}, runSpec{task: "d50", job: "d", queued: 50, start: 50},
		runSpec{task: "dk", job: "d", queued: 61.822, start: 65.5, source: "FAILOVER", param: "soak 0 k223-d"},
		runSpec{task: "d70", job: "d", queued: 70, start: 70},
	)
	in := Input{Runs: runs, Jobs: []Job{job}, End: at(80)}
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("without the trigger's sending the fire of 60 is lost: got %v", Check(in).Anomalies)
	}
	in.Jobs[0].Sent = map[string]time.Time{"k223-d": at(57.5)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the fire of 60 collapsed into the pending trigger: %v", rep.Anomalies)
	}
	in.Jobs[0].Sent = map[string]time.Time{"k223-d": at(71)}
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("a trigger sent after the next instant does not account for it: %v", Check(in).Anomalies)
	}
}

// TestStaleTermComparesLaunches: on Kubernetes a pod starts seconds after
// its creation, and pods start in another order than they were created (pods
// created by term 6 before its leader was
// killed started after the first pod of term 10): a term's launches are
// ordered by their launch instants (history's), not by their starts; a
// launch after a later term's first launch is still found.
func TestStaleTermComparesLaunches(t *testing.T) {
	runs := logOf(runSpec{task: "ja", job: "j", queued: 2, start: 5.5, term: 6}, runSpec{task: "jb", job: "j", queued: 4, start: 5, term: 10})
	in := Input{Runs: runs, Jobs: []Job{every2("j", false)}}
	if got := Check(in).ByKind()[StaleTerm]; got != 1 {
		t.Fatalf("by starts: %d stale-term, want 1 (the rig)", got)
	}
	in.Launched = map[string]time.Time{"ja": at(2.1), "jb": at(4.1)}
	if rep := Check(in); rep.ByKind()[StaleTerm] != 0 {
		t.Errorf("by launches: %v, want no stale-term", rep.Anomalies)
	}
	in.Launched["ja"] = at(4.2)
	if got := Check(in).ByKind()[StaleTerm]; got != 1 {
		t.Errorf("a launch by term 6 after term 10's first: %d stale-term, want 1", got)
	}
}

// A relaunch of a never-started execution may come more than a minute after
// the fires collapsed into it: on Kubernetes its pod counts as lost only
// after its node has been gone for the pod GC's quarantine (the fires of
// 09:19:00-:40, the API server down and then the node
// lost, ran as one FAILOVER run 45 s after the last).
func TestCheckFireCollapsesIntoALateRelaunch(t *testing.T) {
	j := every2("j", false)
	j.Windows[0].To = at(100)
	runs := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "b", job: "j", queued: 88, start: 89, source: "FAILOVER"},
		runSpec{task: "c", job: "j", queued: 90, start: 90}, runSpec{task: "d", job: "j", queued: 92, start: 92}, runSpec{task: "e", job: "j", queued: 94, start: 94},
		runSpec{task: "f", job: "j", queued: 96, start: 96}, runSpec{task: "g", job: "j", queued: 98, start: 98})
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(100)}); len(rep.Anomalies) != 0 {
		t.Errorf("fires 4-88 collapsed into the execution relaunched at 89: %v", rep.Anomalies)
	}
}

// A misfire=false fire collapses into an execution pending at its instant
// whose launch was rolled back and queued again after the fire: its task
// id, kept across the rollback, carries when it was first queued (a launch
// refused for an offer a node's return had replaced). An execution first queued after the fire takes
// none.
func TestCheckFireCollapsesIntoARequeuedExecution(t *testing.T) {
	j := every2("j", false)
	j.Windows[0].To = at(14)
	requeued := jobs.FireTaskID("j", 0, jobs.KindReady, "ready|4", at(4)).String()
	runs := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: requeued, job: "j", queued: 8.5, start: 9},
		runSpec{task: "c", job: "j", queued: 10, start: 10}, runSpec{task: "d", job: "j", queued: 12, start: 12})
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(14)}); len(rep.Anomalies) != 0 {
		t.Errorf("fires 4-8 collapsed into the execution first queued at 4, requeued at 8.5: %v", rep.Anomalies)
	}
	late := jobs.FireTaskID("j", 0, jobs.KindReady, "ready|8", at(8)).String()
	runs = logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: late, job: "j", queued: 8.5, start: 9},
		runSpec{task: "c", job: "j", queued: 10, start: 10}, runSpec{task: "d", job: "j", queued: 12, start: 12})
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(14)}); rep.ByKind()[LostFire] != 2 {
		t.Errorf("an execution first queued at 8 explains neither fire 4 nor 6: %v", rep.Anomalies)
	}
}

// A trigger sent just before the end behind a job's backlog is still
// waiting in the job's ready entry: counted pending, not lost, while the
// entry held that many executions and no trigger sent after it ran.
func TestCheckTriggerWaitingAtTheEndIsPending(t *testing.T) {
	j := Job{Name: "k", Shards: 1, Keys: []string{"K1", "K2"}, Sent: map[string]time.Time{"K1": at(1), "K2": at(9)}}
	runs := logOf(runSpec{task: "k1", job: "k", queued: 1, start: 1, param: "out 0 K1"})
	in := Input{Runs: runs, Jobs: []Job{j}, End: at(10), Pending: map[string]int{"k": 1}, PendingAt: at(11)}
	if rep := Check(in); len(rep.Anomalies) != 0 || rep.Pending != 1 {
		t.Errorf("K2 waits at the end: %v, pending %d", rep.Anomalies, rep.Pending)
	}
	in.Pending = nil
	if rep := Check(in); rep.ByKind()[LostTrigger] != 1 {
		t.Errorf("nothing pending at the end: want K2 lost, got %v", rep.Anomalies)
	}
	j.Sent = map[string]time.Time{"K1": at(9), "K2": at(1)} // K1, sent after K2, ran: K2 was skipped
	in = Input{Runs: runs, Jobs: []Job{j}, End: at(10), Pending: map[string]int{"k": 1}, PendingAt: at(11)}
	if rep := Check(in); rep.ByKind()[LostTrigger] != 1 {
		t.Errorf("a trigger sent later ran: want K2 lost, got %v", rep.Anomalies)
	}
}

// An execution launched before a disable is not pending when the job comes
// back, though its pod starts after; launched
// after the job came back, it is stale.
func TestCheckStaleRunCountsFromTheLaunch(t *testing.T) {
	j := every2("j", true)
	j.Windows = []Window{{From: at(0), To: at(5), Cron: "*/2 * * * * ?"}, {From: at(7), To: at(12), Cron: "*/2 * * * * ?", Opening: at(6.9)}}
	runs := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "b", job: "j", queued: 4, start: 7.5, source: "MISFIRE"},
		runSpec{task: "c", job: "j", queued: 8, start: 8}, runSpec{task: "d", job: "j", queued: 10, start: 10})
	in := Input{Runs: runs, Jobs: []Job{j}, End: at(12)}
	if got := Check(in).ByKind()[StaleRun]; got != 1 {
		t.Fatalf("by its start: %d stale-run, want 1 (the rig)", got)
	}
	in.Launched = map[string]time.Time{"b": at(4.6)}
	if rep := Check(in); rep.ByKind()[StaleRun] != 0 {
		t.Errorf("launched at 4.6, before the disable: %v", rep.Anomalies)
	}
	in.Launched["b"] = at(7.1)
	if got := Check(in).ByKind()[StaleRun]; got != 1 {
		t.Errorf("launched after the job came back: %d stale-run, want 1", got)
	}
}

// A misfire=false fire's rolled-back launch, queued again behind the next
// fire's execution while that one waited (the leader's agent links came
// and went), then behind a trigger sent meanwhile, which launched first:
// it is queued when the trigger's launch took the entry's head (the fire
// of 09:34:40 ran at 35:14, queued 35:05.925, behind
// the fire of :44, launched at :55.87, and a trigger sent at
// 35:02.9, whose launch never started and ran as FAILOVER at 35:08.4).
func TestCheckFireRequeuedBehindTheNextFireAndATrigger(t *testing.T) {
	j := every2("j", false)
	j.Windows[0].To = at(20)
	j.Keys = []string{"k1"}
	runs := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2}, runSpec{task: "c", job: "j", queued: 6, start: 12},
		runSpec{task: "t", job: "j", queued: 14.2, start: 15, source: "FAILOVER", param: "soak 0 k1"},
		runSpec{task: "d", job: "j", queued: 14, start: 16, source: "MISFIRE"},
		runSpec{task: "e", job: "j", queued: 16.5, start: 16.6}, runSpec{task: "f", job: "j", queued: 18, start: 18.1})
	in := Input{Runs: runs, Jobs: []Job{j}, End: at(20)}
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("without the trigger's sending, fire 4 is lost: %v", Check(in).Anomalies)
	}
	in.Jobs[0].Sent = map[string]time.Time{"k1": at(13)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("fire 4 ran requeued behind fire 6 and the trigger k1: %v", rep.Anomalies)
	}
	in.Jobs[0].Sent = map[string]time.Time{"k1": at(14.5)}
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("a trigger sent after the misfire run was queued does not explain its queueing: %v", Check(in).Anomalies)
	}
}

// A standby killed as the etcd store's raft leader: the fire commit in
// flight is held for the store's request timeout, healed or not, and the
// misfire=false fire of an instant after the heal, waiting behind it,
// collapses into the next one's execution, both committed late (17 jobs'
// fires of 11:40:51; the kill at :48.7 healed at
// :50.6, the fires of :50 to :55 committed at :55.14).
func TestCheckFireHeldBehindACommitTheStoreHeld(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(20), Cron: "*/3 * * * * ?"}}}
	runs := logOf(runSpec{task: "a", job: "j", queued: 3, start: 3}, runSpec{task: "b", job: "j", queued: 6, start: 6},
		runSpec{task: "c", job: "j", queued: 12.14, start: 12.3}, runSpec{task: "d", job: "j", queued: 15, start: 15},
		runSpec{task: "e", job: "j", queued: 18, start: 18})
	in := Input{Runs: runs, Jobs: []Job{j}, End: at(20), Faults: []Fault{{Kind: "kill-standby", Start: at(5.7), End: at(7.6)}}}
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("without the store's hold, fire 9 is lost: %v", Check(in).Anomalies)
	}
	in.StoreHold = EtcdCommitHold
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("fire 9 committed behind the held commit and collapsed with fire 12: %v", rep.Anomalies)
	}
	in.Faults[0].Kind = "leader-cut-from-agents"
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("a fault that leaves the store's members alone holds no commit: %v", Check(in).Anomalies)
	}
}

// A misfire=true job (every 5 s) on ZooKeeper, its runs from 09:18:00 as
// seconds: eight fires ran as a MISFIRE replay or a FAILOVER relaunch of
// their own launch. Fire 90 took the relaunch at 135.6 on an augmenting
// path whose end it was, though fire 45 could have stood on the free
// relaunch at 51.9; the relaunch could not be moved again, and fire 400
// found no path. Relaunches are moved along paths as MISFIRE executions
// are: every fire accounted for; without the relaunch at 51.9, one lost.
func TestCheckMovesAFailoverRelaunchAlongAPath(t *testing.T) {
	job := Job{Name: "j", Shards: 1, Misfire: true, Windows: []Window{{From: at(0), To: at(420), Cron: "*/5 * * * * ?"}}}
	own := map[float64]bool{45: true, 50: true, 90: true, 95: true, 135: true, 250: true, 335: true, 400: true}
	var runs []runSpec
	for f := 5.0; f < 420; f += 5 {
		if !own[f] {
			runs = append(runs, runSpec{task: "n" + time.Duration(f*float64(time.Second)).String(), job: "j", queued: f, start: f + 0.05})
		}
	}
	relaunch51 := runSpec{task: "r51", job: "j", queued: 51.0, start: 51.87, source: "FAILOVER"}
	runs = append(runs,
		runSpec{task: "m50", job: "j", queued: 50.85, start: 52.7, source: "MISFIRE"},
		runSpec{task: "m93", job: "j", queued: 93.32, start: 95.4, source: "MISFIRE"},
		runSpec{task: "m95", job: "j", queued: 95.38, start: 96.2, source: "MISFIRE"},
		runSpec{task: "r135", job: "j", queued: 135.51, start: 135.63, source: "FAILOVER"},
		runSpec{task: "m250", job: "j", queued: 250.77, start: 251.4, source: "MISFIRE"},
		runSpec{task: "m334", job: "j", queued: 334.76, start: 335.9, source: "MISFIRE"},
		runSpec{task: "m401", job: "j", queued: 401.46, start: 401.6, source: "MISFIRE"})
	if rep := Check(Input{Runs: logOf(append(runs, relaunch51)...), Jobs: []Job{job}}); len(rep.Anomalies) != 0 {
		t.Errorf("every fire ran once: %v", rep.Anomalies)
	}
	if rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{job}}); len(rep.Anomalies) != 1 || rep.ByKind()[LostFire] != 1 {
		t.Errorf("the relaunch at 51.9 missing: want one lost fire, got %v", rep.Anomalies)
	}
}

// A misfire=true job (*/10, its cron updated to */3 by a
// change sent at 66.88 s and answered at 66.889): the fire of 60, during a
// pause, ran as a MISFIRE replay queued at 61.5; the first execution of
// the new cron, queued at 69, is before the old cron's next instant (70)
// but after the change landed, so it is the new window's fire of 69, not
// the fire of 60's.
func TestCheckExecutionAfterAnUpdateIsTheNewWindows(t *testing.T) {
	for _, misfire := range []bool{true, false} {
		job := Job{Name: "j", Shards: 1, Misfire: misfire, Windows: []Window{
			{From: at(0), To: at(66.88), Cron: "*/10 * * * * ?", Closing: at(66.889)},
			{From: at(66.889), To: at(77.3), Cron: "*/3 * * * * ?", Opening: at(66.88)},
		}}
		var runs []runSpec
		for _, f := range []float64{10, 20, 30, 40, 50, 69, 72, 75} {
			runs = append(runs, runSpec{task: "n" + time.Duration(f*float64(time.Second)).String(), job: "j", queued: f, start: f + 0.08})
		}
		runs = append(runs, runSpec{task: "m60", job: "j", queued: 61.49, start: 61.95, source: "MISFIRE"})
		in := Input{Runs: logOf(runs...), Jobs: []Job{job}, End: at(77.3),
			Faults: []Fault{{Kind: "pause-leader", Start: at(58.2), End: at(63.4)}}}
		if rep := Check(in); len(rep.Anomalies) != 0 {
			t.Errorf("misfire=%v: every fire ran once: %v", misfire, rep.Anomalies)
		}
	}
}

// A launch rolled back after a failed ACCEPT is requeued first, under its
// ids, into the entry the next fire made meanwhile (as the requeue places
// it): the fire of 8, caught up by a new term,
// runs as a MISFIRE execution queued at the entry's 10.001, and the fire
// of 10's execution, queued again when it launched, runs after it; the
// fire of 12 collapses into that one.
func TestCheckRolledBackLaunchRequeuedFirst(t *testing.T) {
	job := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(20), Cron: "*/2 * * * * ?"}}}
	runs := []runSpec{
		{task: "a", job: "j", queued: 2, start: 2.05}, {task: "b", job: "j", queued: 4, start: 4.05}, {task: "c", job: "j", queued: 6, start: 6.05},
		{task: "rolled", job: "j", queued: 10.001, start: 12.5, source: "MISFIRE"},
		{task: "next", job: "j", queued: 12.45, start: 13.1},
		{task: "d", job: "j", queued: 14, start: 14.05}, {task: "e", job: "j", queued: 16, start: 16.05}, {task: "f", job: "j", queued: 18, start: 18.05},
	}
	if rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{job}, End: at(20)}); len(rep.Anomalies) != 0 {
		t.Errorf("every fire ran or collapsed: %v", rep.Anomalies)
	}
	if rep := Check(Input{Runs: logOf(append(runs[:3:3], runs[4:]...)...), Jobs: []Job{job}, End: at(20)}); rep.ByKind()[LostFire] != 2 {
		t.Errorf("without the requeued launch the fires of 8 and 10 are lost: %v", rep.Anomalies)
	}
}

// The heal rule counts from the first fire after the heal that no
// documented rule collapses or voids (a takeover's catch-up may run across
// the first instant after the heal).
func TestCheckHealCountsFromTheFirstFireNotCollapsed(t *testing.T) {
	every10 := func(misfire bool) Job {
		return Job{Name: "j", Shards: 1, Misfire: misfire, Windows: []Window{{From: at(0), To: at(60), Cron: "*/10 * * * * ?"}}}
	}
	heal := []Fault{{Kind: "pause-leader", Start: at(13), End: at(19.8)}}
	// the catch-up of fire 10, started at 18.5, runs until 20.0: fire 20 collapses into it
	catchUp := runSpec{task: "c", job: "j", queued: 18.4, start: 18.5, dur: 1.5, source: "MISFIRE"}
	base := []runSpec{{task: "a", job: "j", queued: 0, start: 0.01}, catchUp}
	with := func(extra ...runSpec) []runlog.Line {
		return logOf(append(append([]runSpec(nil), base...), extra...)...)
	}
	cases := []struct {
		name string
		job  Job
		runs []runlog.Line
		want int
	}{
		{"misfire=false: fire 20 collapsed, fire 30 ran", every10(false), with(runSpec{task: "d", job: "j", queued: 30, start: 30.01}), 0},
		{"misfire=false: fire 20 collapsed, fire 30 did not run", every10(false), with(runSpec{task: "d", job: "j", queued: 40, start: 40.01}), 1},
		{"misfire=false: no run going at 20", every10(false), logOf(base[0], runSpec{task: "d", job: "j", queued: 30, start: 30.01}), 1},
		{"misfire=true: fire 20 waits behind the run, started at 21.2", every10(true), with(runSpec{task: "d", job: "j", queued: 20.1, start: 21.2, source: "MISFIRE"}), 0},
		{"misfire=true: fire 20 not started by 26", every10(true), with(runSpec{task: "d", job: "j", queued: 30, start: 30.01}), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := Check(Input{Runs: c.runs, Jobs: []Job{c.job}, Faults: heal, End: at(60)})
			if got := rep.ByKind()[NoFireAfter]; got != c.want {
				t.Errorf("%d no-fire-after-heal, want %d: %v", got, c.want, rep.Anomalies)
			}
		})
	}
}

// A fire after the heal whose window a change closes before it is due
// may be voided or cleared by it (docs/jobs.md): the heal rule counts from
// the next window's first fire, or not at all when the job stays off.
func TestCheckHealSkipsAFireAChangeVoids(t *testing.T) {
	heal := []Fault{{Kind: "kill-leader", Start: at(13), End: at(19.8)}}
	updated := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(21.5), Cron: "*/10 * * * * ?"}, {From: at(22), To: at(60), Cron: "*/6 * * * * ?"}}}
	first := runSpec{task: "a", job: "j", queued: 10, start: 10.01}
	for _, c := range []struct {
		name string
		job  Job
		runs []runlog.Line
		want int
	}{
		{"updated at 21.5: its first fire at 24 ran", updated, logOf(first, runSpec{task: "b", job: "j", queued: 24, start: 24.01}), 0},
		{"updated at 21.5: its first fire at 24 did not run", updated, logOf(first, runSpec{task: "b", job: "j", queued: 30, start: 30.01}), 1},
		{"disabled at 21.5 for good", Job{Name: "j", Shards: 1, Windows: updated.Windows[:1]}, logOf(first), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := Check(Input{Runs: c.runs, Jobs: []Job{c.job}, Faults: heal, End: at(60)})
			if got := rep.ByKind()[NoFireAfter]; got != c.want {
				t.Errorf("%d no-fire-after-heal, want %d: %v", got, c.want, rep.Anomalies)
			}
		})
	}
}

// every2Until is every2 over [0, to].
func every2Until(name string, misfire bool, to float64) Job {
	j := every2(name, misfire)
	j.Windows[0].To = at(to)
	return j
}

// A fire committed late (a producer behind: a commit the store held,
// with no fault the checker knows of) is queued at its commit; the
// instant it serves tells its fire, and the stall rule then accounts for
// a misfire=false job's instants it skipped (docs/jobs.md).
// Without the instant, the execution passes for the later fire's and the
// earlier fires are lost.
func TestCheckMatchesByTheRecordedInstant(t *testing.T) {
	late := []runSpec{{task: "a", job: "j", queued: 2, start: 2.01, nominal: 2},
		// the fire of 4, committed at 9.5: the producer resumed from then, skipping 6 and 8
		{task: "b", job: "j", queued: 9.5, start: 9.6, nominal: 4},
		{task: "c", job: "j", queued: 10, start: 10.6, nominal: 10}, {task: "d", job: "j", queued: 12, start: 12.01, nominal: 12}}
	in := Input{Runs: logOf(late...), Jobs: []Job{every2Until("j", false, 14)}, End: at(14)}
	rep := Check(in)
	if len(rep.Anomalies) != 0 || rep.Nominal != 4 {
		t.Errorf("misfire=false, the stall rule by the instants: %d matched by instant, %v", rep.Nominal, rep.Anomalies)
	}
	for i := range late {
		late[i].nominal = 0
	}
	in.Runs = logOf(late...)
	if got := Check(in).ByKind()[LostFire]; got != 2 {
		t.Errorf("without the instants the late fire passes for 8's: %d lost-fire, want 2 (4 and 6)", got)
	}

	// misfire=true: each missed instant replayed, whatever the queueing
	replay := []runSpec{{task: "a", job: "j", queued: 2, start: 2.01, nominal: 2},
		{task: "b", job: "j", queued: 9.5, start: 9.6, dur: 0.2, nominal: 4},
		{task: "c", job: "j", queued: 9.8, start: 9.9, dur: 0.2, source: "MISFIRE", nominal: 6},
		{task: "e", job: "j", queued: 10.1, start: 10.2, dur: 0.2, source: "MISFIRE", nominal: 10},
		{task: "d", job: "j", queued: 10.4, start: 10.5, dur: 0.2, source: "MISFIRE", nominal: 8},
		{task: "f", job: "j", queued: 12, start: 12.01, nominal: 12}}
	in = Input{Runs: logOf(replay...), Jobs: []Job{every2Until("j", true, 14)}, End: at(14)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("misfire=true, replays matched by their instants: %v", rep.Anomalies)
	}
	in.Runs = logOf(append(replay[:4:4], replay[5:]...)...) // 10's ran, 8's did not
	if rep := Check(in); rep.ByKind()[LostFire] != 1 || !strings.Contains(rep.Anomalies[0].Detail, "00:00:08") {
		t.Errorf("misfire=true: the fire of 8 never ran: %v", rep.Anomalies)
	}
}

// Two executions serving one instant are one fire run twice (a fire
// commit retried after it had landed); an execution serving an instant
// no window fires (an old cron's after an update) is unexplained.
func TestCheckRecordedInstantRunTwiceOrOutsideItsWindows(t *testing.T) {
	twice := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2.01, nominal: 2}, runSpec{task: "b", job: "j", queued: 4, start: 4.01, nominal: 4},
		runSpec{task: "b2", job: "j", queued: 4.6, start: 4.7, source: "MISFIRE", nominal: 4}, runSpec{task: "c", job: "j", queued: 6, start: 6.01, nominal: 6},
		runSpec{task: "d", job: "j", queued: 8, start: 8.01, nominal: 8})
	if rep := Check(Input{Runs: twice, Jobs: []Job{every2("j", true)}}); rep.ByKind()[DuplicateFire] != 1 || len(rep.Anomalies) != 1 {
		t.Errorf("the fire of 4 ran twice: %v", rep.Anomalies)
	}
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(5), Cron: "*/2 * * * * ?"}, {From: at(5.5), To: at(20), Opening: at(5), Cron: "*/3 * * * * ?"}}}
	runs := []runSpec{{task: "a", job: "j", queued: 2, start: 2.01, nominal: 2}, {task: "b", job: "j", queued: 4, start: 4.01, nominal: 4},
		{task: "c", job: "j", queued: 9, start: 9.01, nominal: 9}, {task: "d", job: "j", queued: 12, start: 12.01, nominal: 12},
		{task: "e", job: "j", queued: 15, start: 15.01, nominal: 15}, {task: "f", job: "j", queued: 18, start: 18.01, nominal: 18}}
	if rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(20)}); len(rep.Anomalies) != 0 {
		t.Errorf("an update at 5 to */3: %v", rep.Anomalies)
	}
	old := append(runs, runSpec{task: "x", job: "j", queued: 8, start: 8.01, nominal: 8}) // the old cron's instant
	if rep := Check(Input{Runs: logOf(old...), Jobs: []Job{j}, End: at(20)}); rep.ByKind()[ExtraRun] != 1 || len(rep.Anomalies) != 1 {
		t.Errorf("the old cron's fire of 8 ran after the update: %v", rep.Anomalies)
	}
}

// Embedded: a deregister sent as the scheduler was paused
// (longer than the client's 5 s) landed, its retry was answered 404, and
// the job left the checks; it had fired on since its last enable. Or a
// register that landed the same way, retried, answered 409, ran on to
// the end. What a job out of the checks runs after the change is not
// judged; a job known off that fires is.
func TestCheckNothingJudgedAfterAChangeOfUnknownOutcome(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(10), Cron: "*/2 * * * * ?", Closing: at(10.1)}}}
	runs := append(clean("j"), runSpec{task: "x", job: "j", queued: 12, start: 12.01, nominal: 12},
		runSpec{task: "y", job: "j", queued: 14, start: 14.01, nominal: 14})
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(20)}
	if rep := Check(in); rep.ByKind()[ExtraRun] != 2 || len(rep.Anomalies) != 2 {
		t.Errorf("a job disabled at 10 fired at 12 and 14: %v", rep.Anomalies)
	}
	in.Jobs[0].Unchecked = at(10)
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the change sent at 10 may not have landed: %v", rep.Anomalies)
	}
}

// A takeover's catch-up of a misfire=false job serves the first instant
// missed, and the others collapsed into it; a misfire=true job's serves
// each.
func TestCheckCatchUpServesTheInstantsMissed(t *testing.T) {
	collapsed := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2, nominal: 2},
		runSpec{task: "b", job: "j", queued: 7, start: 7.2, source: "MISFIRE", nominal: 4}, runSpec{task: "c", job: "j", queued: 8, start: 8, nominal: 8})
	if rep := Check(Input{Runs: collapsed, Jobs: []Job{every2("j", false)}}); len(rep.Anomalies) != 0 || rep.Nominal != 3 {
		t.Errorf("misfire=false: fires 4 and 6 into the catch-up serving 4: %d by instant, %v", rep.Nominal, rep.Anomalies)
	}
	replayed := logOf(runSpec{task: "a", job: "j", queued: 2, start: 2, nominal: 2},
		runSpec{task: "b", job: "j", queued: 7, start: 7.1, source: "MISFIRE", dur: 0.2, nominal: 4},
		runSpec{task: "c", job: "j", queued: 7.3, start: 7.4, source: "MISFIRE", dur: 0.2, nominal: 6}, runSpec{task: "d", job: "j", queued: 8, start: 8, nominal: 8})
	if rep := Check(Input{Runs: replayed, Jobs: []Job{every2("j", true)}}); len(rep.Anomalies) != 0 || rep.Nominal != 4 {
		t.Errorf("misfire=true: each instant replayed: %d by instant, %v", rep.Nominal, rep.Anomalies)
	}
}

// The fires within the slack either side of a window's opening may have
// run: a job's registration answered at 15:10:56.002 had
// committed before its fire of 15:10:56, which ran (the window's From is
// the answer; runs kept before the workload recorded the registration's
// sending have no Opening).
func TestCheckFireJustBeforeTheRegistrationsAnswer(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(2.002), To: at(10), Cron: "*/2 * * * * ?"}}}
	runs := logOf(runSpec{task: "a", job: "j", queued: 2.022, start: 2.06, nominal: 2}, runSpec{task: "b", job: "j", queued: 4, start: 4.01, nominal: 4},
		runSpec{task: "c", job: "j", queued: 6, start: 6.01, nominal: 6}, runSpec{task: "d", job: "j", queued: 8, start: 8.01, nominal: 8})
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(10)}); len(rep.Anomalies) != 0 {
		t.Errorf("the fire of 2, 2 ms before the answer: %v", rep.Anomalies)
	}
	j.Windows[0].From = at(3.5) // answered 1.5 s after the instant, sent after it
	j.Windows[0].Opening = at(2.5)
	if rep := Check(Input{Runs: runs, Jobs: []Job{j}, End: at(10)}); rep.ByKind()[ExtraRun] != 1 || len(rep.Anomalies) != 1 {
		t.Errorf("a fire of 2 for a registration sent at 2.5: %v", rep.Anomalies)
	}
}

// A fire due just before a fault and started after it began waited on
// the fault: its lateness is under faults, not without (a run due a
// moment before a quorum loss starts only after it heals).
func TestCheckLatenessOfAFireDueBeforeAFault(t *testing.T) {
	runs := clean("j")
	runs[1].start = 4.6 // due at 4, the fault from 4.3
	rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{every2("j", false)},
		Faults: []Fault{{Kind: "kill-leader", Start: at(4.3), End: at(4.4)}}, Heal: 5 * time.Second})
	if len(rep.LateFault) != 3 || len(rep.LateCalm) != 1 {
		t.Fatalf("under faults %v, without %v: want the fires of 4, 6 and 8 under faults, 2 without", rep.LateFault, rep.LateCalm)
	}
}

// A DAEMON task is launched once and runs its cron itself: its recorded
// start is its first tick, which says nothing of a fire's lateness, so
// lateness leaves it out (two daemons launched at
// registration, 17:54:16.8, first ticking at their */15 instant 17:54:30,
// made the calm maximum 13.2 s).
func TestCheckLatenessLeavesDaemonTasksOut(t *testing.T) {
	daemon := Job{Name: "d", Shards: 1, Daemon: true}
	runs := append(clean("j"), runSpec{task: "d1", job: "d", queued: 1.2, start: 9, dur: -1})
	rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{every2("j", false), daemon}})
	if len(rep.LateCalm) != 4 || len(rep.LateFault) != 0 {
		t.Fatalf("without faults %v, under %v: want the four fires of j only", rep.LateCalm, rep.LateFault)
	}
	for _, d := range rep.LateCalm {
		if d > 100*time.Millisecond {
			t.Errorf("lateness %v: the daemon's first tick counted", d)
		}
	}
}

// Real Mesos, a misfire=false job (every 5 s): its run of
// 18:08:00 ended at 01.3 while the master was down (killed at 00.8, back
// with every agent registered at 06.7): the agent held the end's update
// until then, so the leader took the run as running and the fire of 05
// collapsed into it; the fire after the master's return plus the resend
// lag is expected again.
func TestCheckFiresCollapseIntoARunEndedWhileTheMasterWasDown(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(20), Cron: "*/5 * * * * ?"}}}
	runs := []runSpec{{task: "ja", job: "j", queued: 5, start: 5.6, dur: 0.7}, {task: "jc", job: "j", queued: 15, start: 15.3}}
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(20),
		Faults: []Fault{{Kind: MasterKilled, Start: at(5.8), End: at(11.7)}}}
	if rep := Check(in); rep.ByKind()[LostFire] != 0 {
		t.Errorf("the fire of 10, while the run ended at 6.3 counted as running until 13.7: %v", rep.Anomalies)
	}
	in.Faults[0].Start, in.Faults[0].End = at(7.4), at(9.5) // the run ended 1.1 s before the master was killed
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("the run's end reached the leader before the master died: %d lost-fire, want 1", got)
	}
	in.Faults[0].Kind, in.Faults[0].Start, in.Faults[0].End = AgentKilled, at(5.8), at(11.7)
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("an agent-killed: its executor sends the end again at once: %d lost-fire, want 1", got)
	}
	for _, k := range []string{"leader-cut-from-master", "apiserver-stopped", "leader-cut-from-apiserver"} {
		in.Faults[0].Kind = k
		if rep := Check(in); rep.ByKind()[LostFire] != 0 {
			t.Errorf("%s: the run ended while the engine was away from the leader: %v", k, rep.Anomalies)
		}
	}
}

// History's row of a run names the cron instant the run served, as the run itself
// does (ELASTICJOB_NOMINAL_AT); another instant, or none where the run had one, is a
// history-outcome anomaly.
func TestCheckHistoryNamesTheInstant(t *testing.T) {
	runs := clean("j")
	for i := range runs {
		runs[i].nominal = runs[i].queued
	}
	hist := func(jd time.Time) map[string][]Outcome {
		return map[string][]Outcome{"ja": {{Success: true, Nominal: at(2)}}, "jb": {{Success: true, Nominal: at(4)}},
			"jc": {{Success: true, Nominal: at(6)}}, "jd": {{Success: true, Nominal: jd}}}
	}
	in := Input{Runs: logOf(runs...), Jobs: []Job{every2("j", false)}, History: hist(at(8)), HistoryAt: at(30)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Fatalf("history names each run's instant: %v", rep.Anomalies)
	}
	for _, wrong := range []time.Time{at(6), {}} {
		in.History = hist(wrong)
		if rep := Check(in); rep.ByKind()[HistoryWrong] != 1 {
			t.Errorf("jd served 8 s, history says %v: %v", wrong, rep.Anomalies)
		}
	}
}

// A kwok node gone with its runs (node-gone): a run on it ended as it went (TASK_LOST), but
// the scheduler holds its task running until the engine's pod GC deletes its pod, 40 s on:
// the fires meanwhile collapse into it, the first fire past the bound is expected again,
// the heal counts from then, and history must say the run failed.
func TestCheckRunLostWithItsNode(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(80), Cron: "*/2 * * * * ?"}}}
	runs := []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01, dur: 0.6, state: "TASK_LOST"}} // ended 2.61
	for i, f := range []float64{48, 50, 52} {
		runs = append(runs, runSpec{task: "jr" + string(rune('a'+i)), job: "j", queued: f, start: f + 0.01})
	}
	gone := Fault{Kind: NodeGone, Start: at(2.6), End: at(9), Detail: "cluster kwok (node kwok-1)"}
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(54), Faults: []Fault{gone},
		History: map[string][]Outcome{"ja": {{}}, "jra": {{Success: true}}, "jrb": {{Success: true}}, "jrc": {{Success: true}}}, HistoryAt: at(80)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("fires 4-48 s, while the run lost with its node counted as running until 47.6: %v", rep.Anomalies)
	}
	in.History["ja"] = []Outcome{{Success: true}}
	if got := Check(in).ByKind()[HistoryWrong]; got != 1 {
		t.Errorf("a run lost with its node a success in history: %d history-outcome, want 1", got)
	}
	in.History["ja"] = []Outcome{{}}
	in.Runs = logOf(append(runs[:2:2], runs[3:]...)...) // the 50 s fire did not run
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("the fire at 50 s, past the bound and its slack, did not run: %d lost-fire, want 1", got)
	}
	in.Runs = logOf(runs[0])
	if got := Check(in).ByKind()[NoFireAfter]; got != 1 {
		t.Errorf("no fire after the tasks of the node gone counted lost: %d no-fire-after-heal, want 1", got)
	}
	in.Runs = logOf(runs...)
	for _, other := range []Fault{{Kind: NodeGone, Start: at(2.7), End: at(9)}, {Kind: "leader-cut-from-apiserver", Start: at(2.6), End: at(9), Detail: "cluster kwok"}} {
		in.Faults = []Fault{other} // the run ended before the node went; a cut: its end heard at the heal
		if got := Check(in).ByKind()[LostFire]; got == 0 {
			t.Errorf("%s from %s: fires 4-46 s lost, yet no lost-fire", other.Kind, other.Start.Sub(t0))
		}
	}
	// the pods' deletion waits for the cluster's API server, down from 30 to 55 s: the
	// fires collapse until it is back (a cut from another cluster's does not hold it)
	late := append(runs[:1:1], runSpec{task: "jl", job: "j", queued: 58, start: 58.01})
	in.Runs, in.End = logOf(late...), at(60)
	delete(in.History, "jra")
	for _, c := range []struct {
		detail string
		lost   bool
	}{{"cluster kwok (kube-apiserver)", false}, {"cluster kube (kube-apiserver)", true}} {
		in.Faults = []Fault{gone, {Kind: "apiserver-stopped", Start: at(30), End: at(55), Detail: c.detail}}
		if got := Check(in).ByKind()[LostFire] > 0; got != c.lost {
			t.Errorf("the API server of %q down: lost-fire %v, want %v (%v)", c.detail, got, c.lost, Check(in).Anomalies)
		}
	}
}

// A launch whose pod never started on a node that went (node-gone) runs again as FAILOVER
// only once the pod GC deleted its pod: its relaunch may stand for its fire a minute after
// that, not only a minute after the fire.
func TestCheckRelaunchAfterANodeGone(t *testing.T) {
	j := every2("j", false)
	runs := []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01}, {task: "jc", job: "j", queued: 6, start: 6.01},
		{task: "jd", job: "j", queued: 8, start: 8.01}, {task: "jf", job: "j", queued: 4, start: 70, source: "FAILOVER", nominal: 4}}
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(10), Faults: []Fault{{Kind: NodeGone, Start: at(4.5), End: at(7), Detail: "cluster kwok (node kwok-0)"}}}
	if rep := Check(in); rep.ByKind()[LostFire] != 0 {
		t.Errorf("the fire of 4 s relaunched at 70 s, within a minute of its pod's deletion (49.5 s): %v", rep.Anomalies)
	}
	in.Faults[0].Kind = AgentKilled
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("relaunched 66 s after its fire without a node gone: %d lost-fire, want 1", got)
	}
	// the scheduler held the never-started task until its pod was deleted: the fires meanwhile
	// collapsed into it, and the heal counts from then
	j.Windows[0].To = at(60)
	runs = []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01}, {task: "jf", job: "j", queued: 4, start: 50, source: "FAILOVER", nominal: 4}}
	for i, f := range []float64{52, 54, 56, 58} {
		runs = append(runs, runSpec{task: "jr" + string(rune('a'+i)), job: "j", queued: f, start: f + 0.01})
	}
	in = Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(60), Faults: []Fault{{Kind: NodeGone, Start: at(4.5), End: at(7), Detail: "cluster kwok (node kwok-0)"}}}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the job held until its pod's deletion (49.5 s), relaunched at 50 s: %v", rep.Anomalies)
	}
	in.Faults[0].Kind = "leader-cut-from-apiserver"
	if got := Check(in).ByKind()[NoFireAfter]; got != 1 {
		t.Errorf("after a cut healed at 7 s the job must fire by 13 s: %d no-fire-after-heal, want 1", got)
	}
}

// The real node crashed (node-crashed): a run killed with it is recorded lost as it went, and
// the scheduler holds its task running until the pod GC deletes its pod (as node-gone), or,
// when the node is back before that, until its kubelet has reported the killed container's
// end: the fires meanwhile collapse into it. A run whose end was posted just before the crash
// may have had its executor's report killed with it: history may say it failed.
func TestCheckRunsOfACrashedNode(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(80), Cron: "*/2 * * * * ?"}}}
	lost := runSpec{task: "ja", job: "j", queued: 2, start: 2.01, dur: 0.6, state: "TASK_LOST"} // ended 2.61
	after := func(from float64) []runSpec {
		rs := []runSpec{lost}
		for i, f := 0, from; f <= 58; i, f = i+1, f+2 {
			rs = append(rs, runSpec{task: "jr" + string(rune('a'+i)), job: "j", queued: f, start: f + 0.01})
		}
		return rs
	}
	hist := func(rs []runSpec) map[string][]Outcome {
		h := map[string][]Outcome{}
		for _, r := range rs {
			h[r.task] = []Outcome{{Success: r.state == ""}}
		}
		return h
	}
	crash := Fault{Kind: NodeCrashed, Start: at(2.6), End: at(20), Detail: "cluster kube (node 127.0.0.1, 2 containers killed)"}
	rs := after(48)
	in := Input{Runs: logOf(rs...), Jobs: []Job{j}, End: at(60), Faults: []Fault{crash}, History: hist(rs), HistoryAt: at(80)}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("back at 20 s, the pod deleted at the bound (47.6 s): fires 4-46 s collapse: %v", rep.Anomalies)
	}
	// back at 40 s, before its pod's deletion: the kubelet reports the container's end by 55 s
	crash.End = at(40)
	rs = after(56)
	in.Runs, in.Faults, in.History = logOf(rs...), []Fault{crash}, hist(rs)
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("back at 40 s, the end reported by 55 s: fires 4-54 s collapse: %v", rep.Anomalies)
	}
	gone := crash
	gone.Kind = NodeGone
	in.Faults = []Fault{gone}
	if got := Check(in).ByKind()[LostFire]; got == 0 {
		t.Error("a kwok node's loss for as long: its pods are deleted by 47.6 s, yet fires 48-54 s missed no lost-fire")
	}
	// the run's end posted 0.09 s before the crash, its report killed: a failure in history
	finished := runSpec{task: "ja", job: "j", queued: 2, start: 2.01}
	crash.End = at(20)
	rs = append([]runSpec{finished}, after(48)[1:]...)
	in.Runs, in.Faults, in.History = logOf(rs...), []Fault{crash}, hist(rs)
	in.History["ja"] = []Outcome{{}}
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("a run ended as its node crashed, a failure in history, its task held until 47.6 s: %v", rep.Anomalies)
	}
	crash.Start = at(4.2) // 1.7 s after its end: its report had gone
	in.Faults = []Fault{crash}
	if got := Check(in).ByKind()[HistoryWrong]; got != 1 {
		t.Errorf("a run ended 1.7 s before the crash a failure in history: %d history-outcome, want 1", got)
	}
}

// On a machine so loaded that fires start late with no fault at all, the
// heal check allows the run's own p99 lateness without faults: job j's
// first start after the agent-killed healed at 12 s comes at 34 s, 20 s
// after its fire at 14, while job c's fires start 24 s late in calm; alone,
// j is judged against the fixed 5 s.
func TestCheckHealAllowsTheRunsCalmLateness(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(80), Cron: "*/2 * * * * ?"}}}
	runs := []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01, dur: -1}, {task: "jb", job: "j", queued: 34, start: 34.01}}
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(90), Faults: []Fault{{Kind: AgentKilled, Start: at(2.6), End: at(12)}}}
	if got := Check(in).ByKind()[NoFireAfter]; got != 1 {
		t.Fatalf("j alone, calm lateness 10 ms: %d no-fire-after-heal, want 1", got)
	}
	c := Job{Name: "c", Shards: 1, Windows: []Window{{From: at(40), To: at(59), Cron: "*/2 * * * * ?"}}}
	for f := 40.0; f < 59; f += 2 {
		runs = append(runs, runSpec{task: "c" + strconv.Itoa(int(f)), job: "c", queued: f, start: f + 24})
	}
	in.Runs, in.Jobs = logOf(runs...), []Job{j, c}
	rep := Check(in)
	if _, p99, _ := Quantiles(rep.LateCalm); p99 != 24*time.Second {
		t.Fatalf("calm p99 %v, want 24s (lateness %v)", p99, rep.LateCalm)
	}
	if got := rep.ByKind()[NoFireAfter]; got != 0 {
		t.Errorf("j started 20 s after its fire, within the calm p99 of 24 s: %d no-fire-after-heal (%v)", got, rep.Anomalies)
	}
}

func TestHealBound(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		calm []time.Duration
		want time.Duration
	}{{nil, 5 * s}, {[]time.Duration{s, 2 * s}, 5 * s}, {[]time.Duration{s, 9 * s}, 9 * s}} {
		if got := healBound(5*s, c.calm); got != c.want {
			t.Errorf("healBound(5s, %v) = %v, want %v", c.calm, got, c.want)
		}
	}
}

package workflow

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)

func cfgOf(nodes ...Node) Config {
	c := Default()
	c.Name, c.Nodes = "w", nodes
	return c
}

// started is a run begun at t0 with its roots started.
func started(t *testing.T, c Config) Run {
	t.Helper()
	r, _ := Step(NewRun(c, "r1", SourceAPI, nil, "", t0), true, Input{Now: t0})
	if r.State != RunRunning {
		t.Fatalf("run did not begin: %s", r.State)
	}
	return r
}

func ok(shards ...Shard) Execution {
	if len(shards) == 0 {
		shards = []Shard{{Item: 0, TaskID: "t0", State: "TASK_FINISHED"}}
	}
	return Execution{Done: true, Success: true, Shards: shards}
}

func failed() Execution {
	return Execution{Done: true, Shards: []Shard{{Item: 0, TaskID: "t0", State: "TASK_FAILED", Message: "exit code 1"}}}
}

func states(r Run) string {
	var b []string
	for _, n := range r.Nodes {
		b = append(b, n.ID+"="+string(n.State))
	}
	return strings.Join(b, " ")
}

func startedNodes(acts []Action) string {
	var b []string
	for _, a := range acts {
		if a.Kind == Start {
			b = append(b, a.Node)
		}
	}
	return strings.Join(b, ",")
}

func TestStepStartsRootsAndFollowsAChain(t *testing.T) {
	c := cfgOf(node("a", "ja"), node("b", "jb", "a"), node("c", "jc", "b"))
	r, acts := Step(NewRun(c, "r1", SourceAPI, nil, "", t0), true, Input{Now: t0})
	if got := startedNodes(acts); got != "a" || states(r) != "a=RUNNING b=PENDING c=PENDING" {
		t.Fatalf("begin: started %q, %s", got, states(r))
	}
	if a := acts[0]; a.Key != NodeKey("w", "r1", "a", 1) || a.Job != "ja" || a.Parameter != nil {
		t.Fatalf("start action %+v", a)
	}
	r, acts = Step(r, false, Input{Now: t0.Add(time.Second)})
	if len(acts) != 0 || states(r) != "a=RUNNING b=PENDING c=PENDING" {
		t.Fatalf("nothing known yet: %v %s", acts, states(r))
	}
	r, acts = Step(r, false, Input{Now: t0.Add(2 * time.Second), Executions: map[string]Execution{"a": ok()}})
	if startedNodes(acts) != "b" || states(r) != "a=SUCCEEDED b=RUNNING c=PENDING" {
		t.Fatalf("after a: %v %s", acts, states(r))
	}
	r, _ = Step(r, false, Input{Now: t0.Add(3 * time.Second), Executions: map[string]Execution{"b": ok()}})
	r, acts = Step(r, false, Input{Now: t0.Add(4 * time.Second), Executions: map[string]Execution{"c": ok()}})
	if len(acts) != 0 || r.State != RunSucceeded || !r.EndedAt.Equal(t0.Add(4*time.Second)) || r.Reason != "" {
		t.Fatalf("end: %v %s %v %q", acts, r.State, r.EndedAt, r.Reason)
	}
	if _, acts := Step(r, true, Input{Now: t0.Add(time.Hour)}); acts != nil {
		t.Fatal("a finished run moved")
	}
}

// TestStepTriggerRules: each rule against every mix of two upstream
// outcomes (S succeeded, F failed, K skipped, R still running).
func TestStepTriggerRules(t *testing.T) {
	cases := []struct {
		rule Rule
		up   string
		want string // start, skip, wait
	}{
		{AllSucceeded, "SS", "start"}, {AllSucceeded, "SF", "skip"}, {AllSucceeded, "SK", "skip"}, {AllSucceeded, "SR", "wait"},
		{AllSucceeded, "FR", "skip"}, {AllSucceeded, "KK", "skip"},
		{AllFailed, "FF", "start"}, {AllFailed, "FS", "skip"}, {AllFailed, "FK", "skip"}, {AllFailed, "FR", "wait"},
		{AllFailed, "SR", "skip"}, {AllFailed, "SS", "skip"},
		{AllDone, "SF", "start"}, {AllDone, "KK", "start"}, {AllDone, "FF", "start"}, {AllDone, "SR", "wait"},
		{OneSucceeded, "SR", "start"}, {OneSucceeded, "FS", "start"}, {OneSucceeded, "FF", "skip"}, {OneSucceeded, "FK", "skip"},
		{OneSucceeded, "FR", "wait"},
		{OneFailed, "FR", "start"}, {OneFailed, "SF", "start"}, {OneFailed, "SS", "skip"}, {OneFailed, "SK", "skip"},
		{OneFailed, "SR", "wait"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s", tc.rule, tc.up), func(t *testing.T) {
			c := cfgOf(node("u1", "j1"), node("u2", "j2"), Node{ID: "d", Job: "jd", DependsOn: []string{"u1", "u2"}, Trigger: tc.rule})
			r := started(t, c)
			ex := map[string]Execution{}
			for i, o := range tc.up {
				id := fmt.Sprintf("u%d", i+1)
				switch o {
				case 'S':
					ex[id] = ok()
				case 'F':
					ex[id] = failed()
				case 'K': // skip it: mark it so, as an upstream rule would
					r.Node(id).State, r.Node(id).SkipReason = NodeSkipped, "test"
				}
			}
			r, acts := Step(r, false, Input{Now: t0.Add(time.Second), Executions: ex})
			d := r.Node("d")
			got := "wait"
			switch {
			case d.State == NodeRunning && startedNodes(acts) == "d":
				got = "start"
			case d.State == NodeSkipped && d.SkipReason != "":
				got = "skip"
			case d.State != NodePending:
				t.Fatalf("d is %s", d.State)
			}
			if got != tc.want {
				t.Fatalf("%s with upstream %s: %s (%s, skip reason %q), want %s", tc.rule, tc.up, got, states(r), d.SkipReason, tc.want)
			}
		})
	}
}

func TestStepSkipPropagatesAndTheRunFails(t *testing.T) {
	// extract → clean → load; alert (oneFailed) on extract and clean;
	// report (allDone) after load and alert.
	c := cfgOf(node("extract", "je"), node("clean", "jc", "extract"), node("load", "jl", "clean"),
		Node{ID: "alert", Job: "ja", DependsOn: []string{"extract", "clean"}, Trigger: OneFailed},
		Node{ID: "report", Job: "jr", DependsOn: []string{"load", "alert"}, Trigger: AllDone})
	r := started(t, c)
	r, acts := Step(r, false, Input{Now: t0.Add(time.Second), Executions: map[string]Execution{"extract": failed()}})
	if states(r) != "extract=FAILED clean=SKIPPED load=SKIPPED alert=RUNNING report=PENDING" || startedNodes(acts) != "alert" {
		t.Fatalf("after extract failed: %s, started %s", states(r), startedNodes(acts))
	}
	if got := r.Node("clean").SkipReason; got != "upstream 'extract' failed" {
		t.Fatalf("clean skip reason %q", got)
	}
	if got := r.Node("load").SkipReason; got != "upstream 'clean' was skipped" {
		t.Fatalf("load skip reason %q", got)
	}
	if m := r.Node("extract").Message; m != "shard 0 ended TASK_FAILED: exit code 1" {
		t.Fatalf("failure message %q", m)
	}
	r, acts = Step(r, false, Input{Now: t0.Add(2 * time.Second), Executions: map[string]Execution{"alert": ok()}})
	if startedNodes(acts) != "report" {
		t.Fatalf("report not started: %s", states(r))
	}
	r, _ = Step(r, false, Input{Now: t0.Add(3 * time.Second), Executions: map[string]Execution{"report": ok()}})
	if r.State != RunFailed || r.Reason != "failed: 'extract'" {
		t.Fatalf("run %s %q", r.State, r.Reason)
	}
}

func TestStepRunSucceedsWithRuleSkips(t *testing.T) {
	c := cfgOf(node("a", "ja"), Node{ID: "alert", Job: "jx", DependsOn: []string{"a"}, Trigger: OneFailed})
	r, _ := Step(started(t, c), false, Input{Now: t0.Add(time.Second), Executions: map[string]Execution{"a": ok()}})
	if r.State != RunSucceeded || r.Node("alert").SkipReason != "trigger oneFailed: no upstream node failed" {
		t.Fatalf("%s %s %q", r.State, states(r), r.Node("alert").SkipReason)
	}
}

func TestStepOutputsBecomeInputs(t *testing.T) {
	str := func(s string) *string { return &s }
	c := cfgOf(node("extract", "je"), node("side", "js"), Node{ID: "load", Job: "jl", DependsOn: []string{"extract", "side"}, JobParameter: str("own")})
	run := NewRun(c, "r1", SourceAPI, str("runparam"), "", t0)
	r, acts := Step(run, true, Input{Now: t0})
	for _, a := range acts {
		if *a.Parameter != "runparam" {
			t.Fatalf("root %s parameter %q", a.Node, *a.Parameter)
		}
	}
	ex := ok(Shard{Item: 0, State: "TASK_FINISHED", Outputs: map[string]string{"rows": "1", "k": "zero"}, StartedAt: t0.Add(time.Second), EndedAt: t0.Add(3 * time.Second)},
		Shard{Item: 1, State: "TASK_FINISHED", Outputs: map[string]string{"k": "one"}, StartedAt: t0.Add(2 * time.Second), EndedAt: t0.Add(4 * time.Second)})
	r, acts = Step(r, false, Input{Now: t0.Add(5 * time.Second), Executions: map[string]Execution{"extract": ex, "side": ok()}})
	e := r.Node("extract")
	if !reflect.DeepEqual(e.Outputs, map[string]string{"rows": "1", "k": "one"}) || !e.StartedAt.Equal(t0.Add(time.Second)) || !e.EndedAt.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("extract: outputs %v started %v ended %v", e.Outputs, e.StartedAt, e.EndedAt)
	}
	if len(acts) != 1 || acts[0].Node != "load" || *acts[0].Parameter != "own" {
		t.Fatalf("load start %+v", acts)
	}
	if want := map[string]map[string]string{"extract": {"rows": "1", "k": "one"}}; !reflect.DeepEqual(map[string]map[string]string(acts[0].Inputs), want) {
		t.Fatalf("inputs %v", acts[0].Inputs)
	}
}

func TestStepInputsTooLargeFailTheNode(t *testing.T) {
	c := cfgOf(node("a", "ja"), node("b", "jb", "a"), Node{ID: "c", Job: "jc", DependsOn: []string{"b"}, Trigger: AllDone})
	big := ok(Shard{Item: 0, State: "TASK_FINISHED", Outputs: map[string]string{"blob": strings.Repeat("x", 70_000)}})
	r, acts := Step(started(t, c), false, Input{Now: t0.Add(time.Second), Executions: map[string]Execution{"a": big}})
	b := r.Node("b")
	if b.State != NodeFailed || !strings.Contains(b.Message, "inputs (the outputs of a) hold 70005 bytes, more than the 65536 bytes allowed") {
		t.Fatalf("b %s %q", b.State, b.Message)
	}
	if startedNodes(acts) != "c" {
		t.Fatalf("allDone after a failed start: %s", states(r))
	}
}

func TestStepRefusedJob(t *testing.T) {
	c := cfgOf(node("a", "gone"))
	r, acts := Step(NewRun(c, "r1", SourceAPI, nil, "", t0), true, Input{Now: t0, Refused: map[string]string{"gone": "job 'gone' no longer exists"}})
	if len(acts) != 0 || r.State != RunFailed || r.Node("a").Message != "could not start: job 'gone' no longer exists" {
		t.Fatalf("%v %s %q", acts, r.State, r.Node("a").Message)
	}
}

func TestStepLostExecutionFailsTheNode(t *testing.T) {
	r := started(t, cfgOf(node("a", "ja")))
	r, _ = Step(r, false, Input{Now: t0.Add(time.Second), Executions: map[string]Execution{"a": {Lost: "dropped"}}})
	if r.State != RunFailed || r.Node("a").Message != "dropped" {
		t.Fatalf("%s %q", r.State, r.Node("a").Message)
	}
}

func TestStepCancel(t *testing.T) {
	c := cfgOf(node("a", "ja"), node("b", "jb"), node("c", "jc", "a"))
	r := started(t, c)
	r, err := RequestCancel(r, "cancelled by admin", t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r, acts := Step(r, false, Input{Now: t0.Add(time.Second)})
	if r.State != RunRunning || len(acts) != 2 || acts[0].Kind != Kill || acts[1].Kind != Kill || states(r) != "a=RUNNING b=RUNNING c=SKIPPED" {
		t.Fatalf("cancelling: %s %v %s", r.State, acts, states(r))
	}
	killed := Execution{Done: true, Shards: []Shard{{Item: 0, State: "TASK_KILLED"}}}
	r, acts = Step(r, false, Input{Now: t0.Add(2 * time.Second), Executions: map[string]Execution{"a": killed, "b": ok()}})
	if len(acts) != 0 || r.State != RunCancelled || states(r) != "a=CANCELLED b=SUCCEEDED c=SKIPPED" || r.Reason != "cancelled by admin" {
		t.Fatalf("cancelled: %s %q %s", r.State, r.Reason, states(r))
	}
	if _, err := RequestCancel(r, "again", t0); !errors.Is(err, ErrRunFinished) {
		t.Fatalf("cancel of a finished run: %v", err)
	}
}

func TestStepCancelQueuedRun(t *testing.T) {
	r, _ := RequestCancel(NewRun(cfgOf(node("a", "ja")), "r1", SourceAPI, nil, "", t0), "no", t0)
	r, acts := Step(r, false, Input{Now: t0})
	if len(acts) != 0 || r.State != RunCancelled || states(r) != "a=SKIPPED" {
		t.Fatalf("%s %s", r.State, states(r))
	}
}

func TestStepTimeout(t *testing.T) {
	c := cfgOf(node("a", "ja"), node("b", "jb", "a"))
	c.TimeoutSeconds = 30
	r := started(t, c)
	if !r.Deadline().Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("deadline %v", r.Deadline())
	}
	r, acts := Step(r, false, Input{Now: t0.Add(29 * time.Second)})
	if r.Cancel != nil || len(acts) != 0 {
		t.Fatal("timed out early")
	}
	r, acts = Step(r, false, Input{Now: t0.Add(30 * time.Second)})
	if r.Cancel == nil || !r.Cancel.TimedOut || len(acts) != 1 || acts[0].Kind != Kill || r.Node("b").SkipReason != "the run timed out after 30s" {
		t.Fatalf("timeout: %+v %v %s", r.Cancel, acts, states(r))
	}
	killed := Execution{Done: true, Shards: []Shard{{Item: 0, State: "TASK_KILLED"}}}
	r, _ = Step(r, false, Input{Now: t0.Add(31 * time.Second), Executions: map[string]Execution{"a": killed}})
	if r.State != RunFailed || r.Reason != "the run timed out after 30s" || r.Node("a").State != NodeCancelled {
		t.Fatalf("%s %q %s", r.State, r.Reason, states(r))
	}
}

func TestRetryKeepsSucceededNodes(t *testing.T) {
	c := cfgOf(node("a", "ja"), node("b", "jb", "a"), node("c", "jc", "b"))
	r := started(t, c)
	out := ok(Shard{Item: 0, State: "TASK_FINISHED", Outputs: map[string]string{"x": "1"}})
	r, _ = Step(r, false, Input{Now: t0.Add(time.Second), Executions: map[string]Execution{"a": out}})
	r, _ = Step(r, false, Input{Now: t0.Add(2 * time.Second), Executions: map[string]Execution{"b": failed()}})
	if r.State != RunFailed {
		t.Fatalf("run %s", r.State)
	}
	if _, err := Retry(started(t, c)); !errors.Is(err, ErrNotRetryable) {
		t.Fatalf("retry of a running run: %v", err)
	}
	r, err := Retry(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != RunQueued || r.Attempt != 2 || states(r) != "a=SUCCEEDED b=PENDING c=PENDING" || r.Node("b").Attempt != 2 || r.Node("a").Attempt != 1 {
		t.Fatalf("retried: %s attempt %d %s", r.State, r.Attempt, states(r))
	}
	r, acts := Step(r, true, Input{Now: t0.Add(time.Minute)})
	if len(acts) != 1 || acts[0].Node != "b" || acts[0].Key != NodeKey("w", "r1", "b", 2) || acts[0].Inputs["a"]["x"] != "1" {
		t.Fatalf("retry starts %+v", acts)
	}
	if !r.StartedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("attempt start %v", r.StartedAt)
	}
}

func TestNodeKeysAreDeterministic(t *testing.T) {
	k := NodeKey("w", "r", "n", 1)
	if k != NodeKey("w", "r", "n", 1) || k == NodeKey("w", "r", "n", 2) || k == NodeKey("w", "r2", "n", 1) || len(k) != 35 {
		t.Fatalf("keys: %s", k)
	}
	if id := NewRunID(t0, "cron"); id != "20250301T020000.000Z-cron" {
		t.Fatalf("run id %s", id)
	}
}

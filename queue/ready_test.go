package queue

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// TestAdd is the misfire and pending-cap rule.
func TestAdd(t *testing.T) {
	one, _ := Add(nil, Trigger{At: t0}, 0)
	if one.Count != 1 || !one.Since.Equal(t0) || !one.NotBefore.IsZero() {
		t.Fatalf("first: %+v", one)
	}
	if _, changed := Add(&one, Trigger{At: t0}, 0); changed {
		t.Fatal("misfire=false did not collapse")
	}
	two, changed := Add(&one, Trigger{Misfire: true, At: t0}, 0)
	if !changed || two.Count != 2 || two.Misfired != 1 {
		t.Fatalf("misfire=true: %+v", two)
	}
	if _, changed := Add(&two, Trigger{Misfire: true, At: t0}, 2); changed {
		t.Fatal("the cap was passed")
	}
	run := &PendingRun{JobParameter: "p", IdempotencyKey: "k"}
	withRun, changed := Add(&one, Trigger{Run: run, At: t0}, 0)
	if !changed || withRun.Count != 2 || len(withRun.Runs) != 1 || len(one.Runs) != 0 {
		t.Fatalf("an override always adds (and leaves the entry read alone): %+v / %+v", withRun, one)
	}
	fire, _ := Add(nil, Trigger{Fire: true, Run: run, At: t0}, 0)
	if !fire.NotBefore.Equal(t0) || len(fire.Runs) != 0 {
		t.Fatalf("a staged fire: %+v", fire)
	}
}

func TestTake(t *testing.T) {
	rd := Ready{Count: 3, Misfired: 2, Runs: []PendingRun{{JobParameter: "a"}}, Since: t0}
	if rd.Misfire() || rd.First().JobParameter != "a" {
		t.Fatalf("first: %+v", rd.First())
	}
	rest, ok := Take(rd, t0.Add(time.Second))
	if !ok || rest.Count != 2 || rest.Misfired != 2 || len(rest.Runs) != 0 || !rest.Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("rest: %+v", rest)
	}
	if !rest.Misfire() {
		t.Fatal("the next execution is a misfire")
	}
	if _, ok := Take(Ready{Count: 1}, t0); ok {
		t.Fatal("the last execution left an entry")
	}
}

// Who or what queued each pending execution is kept in order (runs of
// one origin as one element) and comes out as the executions launch:
// overrides first (as they always did), then the plain ones.
func TestOrigins(t *testing.T) {
	rd, _ := Add(nil, Trigger{Misfire: true, Fire: true, At: t0, By: "cron"}, 0)
	rd, _ = Add(&rd, Trigger{Misfire: true, At: t0, By: "cron"}, 0)
	rd, _ = Add(&rd, Trigger{Misfire: true, At: t0, By: "api:alice"}, 0)
	rd, _ = Add(&rd, Trigger{Run: &PendingRun{JobParameter: "p"}, At: t0, By: "console:bob"}, 0)
	if _, changed := Add(&rd, Trigger{At: t0, By: "api:carol"}, 0); changed {
		t.Fatal("misfire=false did not collapse")
	}
	if len(rd.PlainBy) != 2 || rd.PlainBy[0] != (Origin{"cron", 2}) || rd.PlainBy[1] != (Origin{"api:alice", 1}) {
		t.Fatalf("plain origins: %+v", rd.PlainBy)
	}
	var got []string
	for ok := true; ok; rd, ok = Take(rd, t0) {
		got = append(got, rd.FirstBy())
	}
	if want := "console:bob cron cron api:alice"; strings.Join(got, " ") != want {
		t.Errorf("origins as taken: %q, want %q", strings.Join(got, " "), want)
	}
	legacy := Ready{Count: 2}
	if legacy.FirstBy() != "" {
		t.Error("an entry without origins names one")
	}
}

// A rolled-back launch's ids belong to the execution it names: the next
// one (a run by key and instant, or a plain one behind no run) takes them
// back; taking that execution forgets them, taking another keeps them.
func TestRelaunchBelongsToItsExecution(t *testing.T) {
	run := PendingRun{IdempotencyKey: "k1", At: t0}
	rd := Ready{Count: 2, Since: t0, Runs: []PendingRun{run},
		Relaunch: RelaunchOf(&run, map[int]string{0: "id0", 1: "id1"})}
	if got := rd.Relaunched(1); got != "id1" {
		t.Fatalf("Relaunched(1) = %q, want id1", got)
	}
	if got := rd.Relaunched(2); got != "" {
		t.Fatalf("Relaunched(2) = %q, want none", got)
	}
	rest, ok := Take(rd, t0.Add(time.Second))
	if !ok || rest.Relaunch != nil || rest.Relaunched(0) != "" {
		t.Fatalf("after its execution launched: %+v", rest)
	}

	// A plain execution's ids wait behind a run queued ahead of it.
	plain := Ready{Count: 2, Since: t0, Runs: []PendingRun{run}, Relaunch: RelaunchOf(nil, map[int]string{0: "p0"})}
	if got := plain.Relaunched(0); got != "" {
		t.Fatalf("a run's launch took the plain execution's id %q", got)
	}
	rest, _ = Take(plain, t0)
	if got := rest.Relaunched(0); got != "p0" {
		t.Fatalf("the plain execution's id after the run launched = %q, want p0", got)
	}
	if _, ok := Take(rest, t0); ok {
		t.Fatal("one execution was left")
	}
}

// Each plain execution keeps the cron instant it serves, also when its
// fire is queued late, and hands it to its launch (FirstNominal); an entry
// written before instants were recorded reads as none for its executions.
func TestNominalInstants(t *testing.T) {
	t1, t2, t3 := t0, t0.Add(2*time.Second), t0.Add(4*time.Second)
	rd, _ := Add(nil, Trigger{Misfire: true, Fire: true, At: t1, Nominal: t1, By: "cron"}, 0)
	rd, _ = Add(&rd, Trigger{Misfire: true, Fire: true, At: t2.Add(3 * time.Second), Nominal: t2, By: "cron"}, 0) // committed 3 s late
	if st, _ := Add(&rd, Trigger{Fire: true, At: t3, Nominal: t3, By: "cron"}, 0); st.Count != rd.Count || !st.Staged.Equal(t3) {
		t.Fatalf("misfire=false: the fire neither collapsed nor waits for its instant: %+v", st)
	}
	rd, _ = Add(&rd, Trigger{Misfire: true, At: t3, By: "api:alice"}, 0)      // a plain trigger: no instant
	rd, _ = Add(&rd, Trigger{Run: &PendingRun{JobParameter: "p"}, At: t3}, 0) // an override: launches first, no instant
	var got []time.Time
	for ok := true; ok; rd, ok = Take(rd, t3) {
		got = append(got, rd.FirstNominal())
	}
	want := []time.Time{{}, t1, t2, {}}
	if len(got) != len(want) {
		t.Fatalf("instants as taken: %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("execution %d serves %v, want %v", i, got[i], want[i])
		}
	}

	// an entry an older version wrote: two executions without instants,
	// then a fire that records its own
	var legacy Ready
	if err := json.Unmarshal([]byte(`{"count":2,"since":"2026-11-25T10:00:00Z","misfired":1,"plainBy":[{"by":"cron","n":2}]}`), &legacy); err != nil {
		t.Fatal(err)
	}
	rd, _ = Add(&legacy, Trigger{Misfire: true, Fire: true, At: t3, Nominal: t3, By: "cron"}, 0)
	got = nil
	for ok := true; ok; rd, ok = Take(rd, t3) {
		got = append(got, rd.FirstNominal())
	}
	if len(got) != 3 || !got[0].IsZero() || !got[1].IsZero() || !got[2].Equal(t3) {
		t.Errorf("after an old entry: %v, want [0 0 %v]", got, t3)
	}
	b, _ := json.Marshal(legacy)
	if strings.Contains(string(b), "nominal") {
		t.Errorf("an entry without instants writes them: %s", b)
	}
}

// A launch rolled back goes back first among the plain executions with
// its instant (WithFirstPlain), the others keeping theirs.
func TestNominalOfARequeuedExecution(t *testing.T) {
	t1, t2 := t0, t0.Add(2*time.Second)
	rd, _ := Add(nil, Trigger{Misfire: true, Fire: true, At: t2, Nominal: t2, By: "cron"}, 0)
	two, _ := Add(&rd, Trigger{Misfire: true, Fire: true, At: t2, Nominal: t2.Add(2 * time.Second), By: "cron"}, 0)
	for _, c := range []struct {
		name string
		rd   Ready
		at   time.Time
		want []time.Time
	}{
		{"before a recorded one", rd, t1, []time.Time{t1, t2}},
		{"none, before a recorded one", rd, time.Time{}, []time.Time{{}, t2}},
		{"into an empty entry", Ready{}, t1, []time.Time{t1}},
		{"none, into an old entry", Ready{Count: 1}, time.Time{}, []time.Time{{}, {}}},
		{"before an old entry's executions", Ready{Count: 1}, t1, []time.Time{t1, {}}},
		{"before a run it does not continue", two, t1.Add(-5 * time.Second), []time.Time{t1.Add(-5 * time.Second), t2, t2.Add(2 * time.Second)}},
		{"before a run it continues", two, t1, []time.Time{t1, t2, t2.Add(2 * time.Second)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.rd.WithFirstPlain(c.at)
			if r.Count != len(c.want) {
				t.Fatalf("count %d, want %d", r.Count, len(c.want))
			}
			var got []time.Time
			for ok := true; ok; r, ok = Take(r, t2) {
				got = append(got, r.FirstNominal())
			}
			for i := range c.want {
				if !got[i].Equal(c.want[i]) {
					t.Errorf("execution %d serves %v, want %v (all: %v)", i, got[i], c.want[i], got)
				}
			}
		})
	}
}

// The instants stay with their executions through any mix of fires,
// plain triggers, overrides, launches and rollbacks: checked against a
// plain model (overrides launch first, then the plain executions in
// order), from a new entry and from one an earlier version wrote.
func TestNominalFollowsItsExecution(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 901))
	for _, start := range []int{0, 2} {
		rd := Ready{Count: start}
		runs, plain := 0, make([]time.Time, start) // the instant each plain execution serves
		capped, fire, exact := false, t0, 0
		for step := range 5000 {
			at := t0.Add(time.Duration(step) * time.Second)
			switch op := rng.IntN(12); {
			case op < 2: // a fire of a cron every 2 s (so most executions in a row share a run)
				fire = fire.Add(2 * time.Second)
				rd, _ = Add(&rd, Trigger{Misfire: true, Fire: true, At: at, Nominal: fire, By: "cron"}, 0)
				plain = append(plain, fire)
			case op == 2: // a plain trigger
				rd, _ = Add(&rd, Trigger{Misfire: true, At: at, By: "api:alice"}, 0)
				plain = append(plain, time.Time{})
			case op == 3: // an override
				rd, _ = Add(&rd, Trigger{Run: &PendingRun{JobParameter: "p"}, At: at}, 0)
				runs++
			case op >= 4 && op <= 9 && runs+len(plain) > 0: // a launch
				var want time.Time
				if runs == 0 && nominalLen(rd.Nominal) == len(plain) {
					want = plain[0]
				}
				if got := rd.FirstNominal(); !got.Equal(want) && !(capped && got.IsZero()) {
					t.Fatalf("start %d step %d: the launch serves %v, want %v", start, step, got, want)
				}
				if rd, _ = Take(rd, at); runs > 0 {
					runs--
				} else {
					plain = plain[1:]
				}
			case op == 10 && runs == 0 && len(plain) > 0: // a plain launch rolled back
				first := rd.FirstNominal()
				rd, _ = Take(rd, at)
				rd = rd.WithFirstPlain(first)
			case op == 11: // a plain execution put back without an instant
				rd = rd.WithFirstPlain(time.Time{})
				plain = append([]time.Time{{}}, plain...)
			}
			if rd.Count != runs+len(plain) || nominalLen(rd.Nominal) > len(plain) || len(rd.Nominal) > maxNominalRuns {
				t.Fatalf("start %d step %d: count %d, %d instants in %d runs; want %d, at most %d", start, step, rd.Count, nominalLen(rd.Nominal), len(rd.Nominal), runs+len(plain), len(plain))
			}
			// the instants recorded are the newest executions' (the older
			// ones' never were, or were forgotten past maxNominalRuns: then
			// one may read as none)
			if len(plain) == 0 { // nothing forgotten is left
				capped = false
			}
			capped = capped || len(rd.Nominal) == maxNominalRuns
			if !capped {
				exact++
			}
			if got, want := rd.NominalInstants(), plain[len(plain)-nominalLen(rd.Nominal):]; !slices.EqualFunc(got, want, func(g, w time.Time) bool { return g.Equal(w) || capped && g.IsZero() }) {
				t.Fatalf("start %d step %d: instants %v, want %v", start, step, got, want)
			}
		}
		if exact < 2500 {
			t.Errorf("start %d: only %d of 5000 steps checked exactly (the rest past maxNominalRuns)", start, exact)
		}
	}
}

// A backlog of a regular cron is one run however long (a catch-up of
// 10,000 missed instants, a stall's replays), and an irregular one keeps
// at most maxNominalRuns runs, the newest: an entry stays small.
func TestNominalRunsStaySmall(t *testing.T) {
	var rd Ready
	for i := range 10_000 {
		rd, _ = Add(&rd, Trigger{Misfire: true, Fire: true, At: t0, Nominal: t0.Add(time.Duration(i) * 2 * time.Second), By: "catch-up"}, 0)
	}
	if len(rd.Nominal) != 1 || nominalLen(rd.Nominal) != 10_000 || !rd.FirstNominal().Equal(t0) {
		t.Fatalf("a regular backlog in %d runs, %d instants, first %v", len(rd.Nominal), nominalLen(rd.Nominal), rd.FirstNominal())
	}
	if b, _ := json.Marshal(rd); len(b) > 400 {
		t.Errorf("an entry of 10,000 executions is %d bytes: %s", len(b), b)
	}
	rd, _ = Take(rd, t0)
	if !rd.FirstNominal().Equal(t0.Add(2 * time.Second)) {
		t.Errorf("after a launch the next serves %v", rd.FirstNominal())
	}
	var irregular Ready
	at := t0
	for i := range 100 {
		at = at.Add(time.Duration(1+i%7) * time.Second)
		irregular, _ = Add(&irregular, Trigger{Misfire: true, Fire: true, At: at, Nominal: at, By: "cron"}, 0)
	}
	if len(irregular.Nominal) != maxNominalRuns || !irregular.NominalInstants()[nominalLen(irregular.Nominal)-1].Equal(at) || !irregular.FirstNominal().IsZero() {
		t.Errorf("an irregular backlog: %d runs, %v", len(irregular.Nominal), irregular.Nominal)
	}
}

// TestAFireStagedIntoAPendingExecutionCollapsesAtItsInstant: a
// misfire=false job's cron fire staged ahead while an execution is
// pending collapses into it only if it is still pending at the fire's
// instant; launched before, the fire is the entry's next execution, held
// back until its instant (a fire of 22:05:20 staged at 22:05:15 into the
// pending execution of 22:05:10, which launched at 22:05:16, would
// otherwise be lost).
func TestAFireStagedIntoAPendingExecutionCollapsesAtItsInstant(t *testing.T) {
	pending, _ := Add(nil, Trigger{Fire: true, At: t0, By: "cron", Nominal: t0}, 0)
	at := t0.Add(10 * time.Second)
	staged, changed := Add(&pending, Trigger{Fire: true, At: at, By: "cron", Nominal: at}, 0)
	if !changed || staged.Count != 1 || !staged.Staged.Equal(at) {
		t.Fatalf("the staged fire is not recorded: %+v", staged)
	}
	if again, changed := Add(&staged, Trigger{Fire: true, At: at.Add(10 * time.Second), By: "cron"}, 0); changed || !again.Staged.Equal(at) {
		t.Fatalf("a later fire replaced the earliest staged one: %+v", again)
	}
	if _, changed := Add(&staged, Trigger{At: at, By: "api:u"}, 0); changed {
		t.Fatal("a plain trigger no longer collapses")
	}
	rest, ok := Take(staged, at.Add(-4*time.Second)) // launched before the fire's instant
	if !ok || rest.Count != 1 || !rest.NotBefore.Equal(at) || !rest.FirstNominal().Equal(at) || rest.FirstBy() != "cron" || !rest.Staged.IsZero() {
		t.Fatalf("launched before the staged fire's instant, the fire was lost: %+v, %v", rest, ok)
	}
	if _, ok := Take(staged, at.Add(time.Second)); ok {
		t.Fatal("launched after the fire's instant (pending then: it collapsed), an entry is left")
	}
	misfire, _ := Add(&pending, Trigger{Fire: true, Misfire: true, At: at}, 0)
	if misfire.Count != 2 || !misfire.Staged.IsZero() {
		t.Fatalf("misfire=true adds an execution: %+v", misfire)
	}
}

// TestAPlainExecutionDoesNotCollapseIntoARun: with misfire=false a plain
// execution (a fire, a catch-up, a plain trigger) collapses into a plain
// one pending, never into a run with an override, which serves its
// override and not the instant: staged or not, the fire is queued behind
// the run and keeps its instant; a second one collapses into it.
func TestAPlainExecutionDoesNotCollapseIntoARun(t *testing.T) {
	run, _ := Add(nil, Trigger{Run: &PendingRun{JobParameter: "p"}, At: t0}, 0)
	for _, fire := range []bool{false, true} {
		at := t0.Add(time.Second)
		rd, changed := Add(&run, Trigger{Fire: fire, At: at, Nominal: at}, 0)
		if !changed || rd.Count != 2 || !rd.Staged.IsZero() {
			t.Fatalf("fire %v: %+v %v, want it queued behind the run", fire, rd, changed)
		}
		if got := rd.NominalInstants(); len(got) != 1 || !got[0].Equal(at) {
			t.Fatalf("fire %v: serves %v", fire, got)
		}
		rest, _ := Take(rd, at)
		if rest.Count != 1 || rest.First() != nil || !rest.FirstNominal().Equal(at) || rest.Gen != rd.Gen {
			t.Fatalf("fire %v: after the run %+v", fire, rest)
		}
		if _, changed := Add(&rd, Trigger{At: at.Add(time.Second)}, 0); changed {
			t.Fatalf("fire %v: a plain trigger did not collapse into the plain execution pending", fire)
		}
	}
}

// TestAStagedFireKeepsTheEntrysGeneration: the entry a staged fire
// becomes is the same entry, rewritten: its generation stays.
func TestAStagedFireKeepsTheEntrysGeneration(t *testing.T) {
	rd, _ := Add(nil, Trigger{Fire: true, At: t0}, 0)
	rd.Gen = 7
	rd, _ = Add(&rd, Trigger{Fire: true, At: t0.Add(time.Second)}, 0)
	next, ok := Take(rd, t0.Add(time.Second/2))
	if !ok || next.Gen != 7 || !next.NotBefore.Equal(t0.Add(time.Second)) {
		t.Fatalf("after the take: %+v %v", next, ok)
	}
}

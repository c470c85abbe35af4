package timetable

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/datadriven"
	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/timing"
)

// TestScenarios reads testdata/*.txt: the timetable's heap, staged
// fires and beliefs before "----", and one wake of it after: the fires it
// takes to dispatch (Due; in commits of one or more instants, as the
// producer batches them), each taken source's following fire (Follow),
// the fires staged ahead, and when it wakes next (Wake)
// (internal/datadriven; -rewrite writes the expected output).
//
// Input lines (times are seconds after t0):
//
//	now S
//	lead S
//	job NAME every=P [offset=O] [queued] [off] [misfire]   (off: the job may not run)
//	source NAME cron=EXPR [zone=Z] [jitter=D] [calendar=C] [queued] [misfire]
//	                                             (any source, a job or a workflow, planned by its timing.Schedule: the crons in
//	                                             Quartz syntax with '_' for ' ', NAME its key, ns~name in a namespace)
//	calendar NS/NAME weekdays=MON,TUE,…          (a namespace's calendar, compiled in UTC; NS "default" for a bare key)
//	jitter [NS] D                                (the scheduler-wide window, or a namespace's)
//	cap N                                        (a misfire=true job's pending cap; 100 unless set)
//	fire NAME at=S [prev=S] [stale] [behind=N]   (a heap entry; prev defaults to at-P; behind: the missed instants in a row it replays)
//	changed NAME [after=S]                       (the source is scheduled anew from S, else now: before the wake)
//	staged NAME at=S
//	void NAME every=P                            (the job's schedule changes to every P while its taken fire is committed:
//	                                             the fire is void and its follower is the new schedule's)
//	missed NAME from=S to=S [limit=N]            (the catch-up: the instants no one fired in (from, to], by the misfire rule)
func TestScenarios(t *testing.T) {
	datadriven.Glob(t, "testdata/*.txt", func(t *testing.T, c datadriven.Case) []string {
		return runTiming(t, c)
	})
}

type periodic struct {
	every, offset time.Duration
	off, misfire  bool
}

func tsec(s string) time.Duration {
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(fmt.Sprintf("seconds: %q", s))
	}
	return time.Duration(f * float64(time.Second))
}

func tfmt(t0, at time.Time) string {
	return strconv.FormatFloat(at.Sub(t0).Seconds(), 'f', -1, 64)
}

func runTiming(t *testing.T, c datadriven.Case) []string {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	now, lead := t0, time.Duration(0)
	jobs := map[string]periodic{}
	sources := map[string]timing.Schedule{}
	in := timing.Inputs{Zone: time.UTC, Calendars: map[string]timing.Compiled{}, Jitters: map[string]time.Duration{}}
	var changes, missed, voids []string
	var ft Table
	pendingCap := 100
	ft.Replay = func(job string) int {
		if jobs[job].misfire || sources[job].Misfire {
			return pendingCap
		}
		return 0
	}
	next := func(job string, after time.Time) (time.Time, uint64, bool) {
		if sch, ok := sources[job]; ok {
			at, ok := in.Next(sch, nil, after)
			return at, 0, ok
		}
		j, ok := jobs[job]
		if !ok || j.off {
			return time.Time{}, 0, false
		}
		k := after.Sub(t0.Add(j.offset))/j.every + 1
		if after.Before(t0.Add(j.offset)) {
			k = 0
		}
		return t0.Add(j.offset + k*j.every), 0, true
	}
	for n, l := range c.Input {
		w, err := datadriven.Fields(l)
		if err != nil || len(w) < 2 {
			t.Fatalf("%s: %q: %v", c.Where(n), l, err)
		}
		m := datadriven.KV(w[2:])
		switch w[0] {
		case "now":
			now = t0.Add(tsec(w[1]))
		case "lead":
			lead = tsec(w[1])
		case "cap":
			if pendingCap, err = strconv.Atoi(w[1]); err != nil {
				t.Fatalf("%s: %q: %v", c.Where(n), l, err)
			}
		case "job":
			jobs[w[1]] = periodic{every: tsec(m["every"]), offset: tsec(m["offset"]), off: m["off"] != "", misfire: m["misfire"] != ""}
			if m["queued"] != "" {
				ft.NoteQueued(w[1], true)
			}
		case "source":
			sources[w[1]] = timing.Schedule{Key: w[1], Crons: []string{strings.ReplaceAll(m["cron"], "_", " ")}, Zone: m["zone"],
				Jitter: m["jitter"], Calendar: m["calendar"], Misfire: m["misfire"] != ""}
			if m["queued"] != "" {
				ft.NoteQueued(w[1], true)
			}
		case "calendar":
			ns, name, _ := strings.Cut(w[1], "/")
			cal, err := calendar.Calendar{Name: name, Weekdays: strings.Split(m["weekdays"], ",")}.Compile(time.UTC)
			if err != nil {
				t.Fatalf("%s: %q: %v", c.Where(n), l, err)
			}
			in.Calendars[timing.CalendarKey(ns, name)] = timing.Compiled{Calendar: cal}
		case "jitter":
			if len(w) == 2 {
				in.Wide = tsec(strings.TrimSuffix(w[1], "s"))
			} else {
				in.Jitters[w[1]] = tsec(strings.TrimSuffix(w[2], "s"))
			}
		case "changed":
			changes = append(changes, l)
		case "missed":
			missed = append(missed, l)
		case "void":
			voids = append(voids, l)
		case "fire":
			at := t0.Add(tsec(m["at"]))
			prev := at.Add(-jobs[w[1]].every)
			if p, ok := m["prev"]; ok {
				prev = t0.Add(tsec(p))
			}
			if ft.marks == nil {
				ft.marks = map[string]mark{}
			}
			mk := ft.marks[w[1]]
			mk.gen++
			ft.marks[w[1]] = mk
			gen := mk.gen
			if m["stale"] != "" {
				gen--
			}
			behind := 0
			if b, ok := m["behind"]; ok {
				if behind, err = strconv.Atoi(b); err != nil {
					t.Fatalf("%s: %q: %v", c.Where(n), l, err)
				}
			}
			heap.Push(&ft.h, Fire{At: at, Source: w[1], Gen: gen, Prev: prev, Behind: behind})
		case "staged":
			ft.staged = append(ft.staged, Fire{At: t0.Add(tsec(m["at"])), Source: w[1]})
		default:
			t.Fatalf("%s: unknown line %q", c.Where(n), l)
		}
	}
	slices.SortStableFunc(ft.staged, func(a, b Fire) int { return a.At.Compare(b.At) })

	var out []string
	names := func(fs []Fire) string {
		var s []string
		for _, f := range fs {
			n := f.Source + "@" + tfmt(t0, f.At)
			if f.Behind > 0 {
				n += fmt.Sprintf("(replay %d)", f.Behind)
			}
			s = append(s, n)
		}
		return strings.Join(s, " ")
	}
	for _, l := range changes {
		w, _ := datadriven.Fields(l)
		after := now
		if a, ok := datadriven.KV(w[2:])["after"]; ok {
			after = t0.Add(tsec(a))
		}
		ft.Changed(w[1], after, next)
	}
	if at, ok := ft.NextFireAt(now); ok {
		out = append(out, "next fire at "+tfmt(t0, at))
	}
	due := ft.Due(now, lead, next)
	for _, b := range commits(due, 3) { // commits of at most 3 fires here
		out = append(out, "dispatch "+names(b))
	}
	void := map[string]bool{}
	for _, l := range voids { // changed while the commit was in flight: the producer reschedules it from now
		w, _ := datadriven.Fields(l)
		j := jobs[w[1]]
		j.every = tsec(datadriven.KV(w[2:])["every"])
		jobs[w[1]] = j
		ft.Changed(w[1], now, next)
		void[w[1]] = true
	}
	for _, f := range due {
		if void[f.Source] {
			out = append(out, "void "+names([]Fire{f}))
		} else {
			ft.Landed(f)
		}
		ft.Follow(f, now, next)
	}
	if len(ft.staged) > 0 {
		out = append(out, "staged "+names(ft.staged))
	}
	pending := slices.Clone(ft.h)
	slices.SortFunc(pending, func(a, b Fire) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Source, b.Source)
	})
	var live []Fire
	for _, f := range pending {
		if f.Gen == ft.Gen(f.Source) {
			live = append(live, f)
		}
	}
	if len(live) > 0 {
		out = append(out, "heap "+names(live))
	}
	for _, l := range missed {
		w, _ := datadriven.Fields(l)
		m := datadriven.KV(w[2:])
		limit := 100
		if v, ok := m["limit"]; ok {
			limit, _ = strconv.Atoi(v)
		}
		src := w[1]
		at := Missed(func(after time.Time) (time.Time, bool) {
			at, _, ok := next(src, after)
			return at, ok
		}, t0.Add(tsec(m["from"])), t0.Add(tsec(m["to"])), limit, jobs[src].misfire || sources[src].Misfire)
		var ss []string
		for _, a := range at {
			ss = append(ss, tfmt(t0, a))
		}
		out = append(out, fmt.Sprintf("missed %s: %s", src, strings.Join(ss, " ")))
	}
	wait, blocker, ok := ft.Wake(now, lead)
	switch {
	case !ok:
		out = append(out, "wake never (no fire)")
	case blocker != "":
		out = append(out, fmt.Sprintf("wake in %s, held by %s (or when its ready entry leaves)", wait, blocker))
	default:
		out = append(out, fmt.Sprintf("wake in %s", wait))
	}
	return out
}

// commits groups due fires (in heap order) as the producer commits them:
// one instant never split, consecutive instants joined up to max fires.
func commits(due []Fire, max int) [][]Fire {
	var out [][]Fire
	for i := 0; i < len(due); {
		j := i + 1
		for j < len(due) && due[j].At.Equal(due[i].At) {
			j++
		}
		if n := len(out); n > 0 && len(out[n-1])+j-i <= max {
			out[n-1] = append(out[n-1], due[i:j]...)
		} else {
			out = append(out, slices.Clone(due[i:j]))
		}
		i = j
	}
	return out
}

// The fires staged ahead are forgotten as their instants come also when
// nothing asks for them (NextFires): at 1,000 fires a second for a
// minute, the list holds about a lead's worth, not every fire since the
// last round (100,000 jobs under load held 27 MB of them).
func TestStagedStaysALeadLong(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var tt Table
	const lead = 2 * time.Second
	for ms := range 60_000 {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		tt.noteStaged(Fire{At: now.Add(lead), Source: fmt.Sprintf("j%d", ms%1000)}, now)
	}
	if n, c := len(tt.staged), cap(tt.staged); n > 2_001 || c > 4_096 {
		t.Fatalf("%d fires staged (array of %d), want about a lead's 2,000", n, c)
	}
}

// A fire held for its source's ready entry holds its whole instant; the
// wakes that follow while nothing deciding it changed (another source's
// entry leaving, as each launch does) take nothing and work out no
// follower, and the fires put back are not counted as staged. Its own
// entry leaving, or a source scheduled anew, releases the instant.
func TestHeldInstantCostsNothingUntilItChanges(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	const lead = 2 * time.Second
	calls := 0
	every := func(source string, after time.Time) (time.Time, uint64, bool) {
		calls++
		return after.Truncate(time.Second).Add(time.Second), 0, true
	}
	var tt Table
	tt.NoteQueued("other", true)
	at := t0.Add(time.Second)
	for i := range 100 {
		heap.Push(&tt.h, Fire{At: at, Source: fmt.Sprintf("j%03d", i), Prev: t0})
	}
	tt.NoteQueued("j050", true) // its last fire's entry is still queued: its next is held
	now := t0.Add(100 * time.Millisecond)
	if due := tt.Due(now, lead, every); len(due) != 0 {
		t.Fatalf("took %d fires of a held instant", len(due))
	}
	if len(tt.staged) != 0 {
		t.Fatalf("%d fires put back were noted as staged", len(tt.staged))
	}
	calls = 0
	for i := range 50 { // the other entries come and go, one a launch
		tt.NoteQueued("other", i%2 == 0)
		if due := tt.Due(now.Add(time.Duration(i)*time.Millisecond), lead, every); len(due) != 0 {
			t.Fatalf("wake %d took %d fires of a held instant", i, len(due))
		}
	}
	if calls != 0 {
		t.Fatalf("the wakes of a held instant worked out %d followers, want none", calls)
	}
	tt.NoteQueued("j050", false)
	if due := tt.Due(now.Add(time.Second/2), lead, every); len(due) != 100 {
		t.Fatalf("its entry gone, the instant gave %d fires, want 100", len(due))
	}

	// A source scheduled anew before the held instant is taken at once.
	var t2 Table
	t2.NoteQueued("slow", true)
	heap.Push(&t2.h, Fire{At: at, Source: "slow", Prev: t0})
	if due := t2.Due(now, lead, every); len(due) != 0 {
		t.Fatalf("took %d fires of a held instant", len(due))
	}
	t2.Changed("new", t0.Add(-time.Second), every) // its next: t0, due now
	if due := t2.Due(now, lead, every); len(due) != 1 || due[0].Source != "new" {
		t.Fatalf("after a source was scheduled anew: %v, want new's fire", due)
	}
}

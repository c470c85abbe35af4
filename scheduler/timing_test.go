package scheduler

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/datadriven"
)

// TestTimingScenarios reads testdata/timing/*.txt: the producer's heap,
// staged fires and beliefs before "----", and one wake of it after: the
// fires it takes to dispatch (in commits of one or more instants), each
// taken job's following fire, the fires staged ahead, and when it wakes
// next (internal/datadriven; -rewrite writes the expected output).
//
// Input lines (times are seconds after t0):
//
//	now S
//	lead S
//	job NAME every=P [offset=O] [queued] [off] [misfire]   (off: the job may not run)
//	cap N                                        (a misfire=true job's pending cap; 100 unless set)
//	fire NAME at=S [prev=S] [stale] [behind=N]   (a heap entry; prev defaults to at-P; behind: the missed instants in a row it replays)
//	staged NAME at=S
func TestTimingScenarios(t *testing.T) {
	datadriven.Glob(t, "testdata/timing/*.txt", func(t *testing.T, c datadriven.Case) []string {
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
	var ft fireTimes
	ft.init()
	pendingCap := 100
	ft.replay = func(job string) int {
		if jobs[job].misfire {
			return pendingCap
		}
		return 0
	}
	next := func(job string, after time.Time) (time.Time, uint64, bool) {
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
				if ft.queued == nil {
					ft.queued = map[string]bool{}
				}
				ft.queued[w[1]] = true
			}
		case "fire":
			at := t0.Add(tsec(m["at"]))
			prev := at.Add(-jobs[w[1]].every)
			if p, ok := m["prev"]; ok {
				prev = t0.Add(tsec(p))
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
			heap.Push(&ft.h, fire{at: at, job: w[1], gen: gen, prev: prev, behind: behind})
		case "staged":
			ft.staged = append(ft.staged, fire{at: t0.Add(tsec(m["at"])), job: w[1]})
		default:
			t.Fatalf("%s: unknown line %q", c.Where(n), l)
		}
	}
	slices.SortStableFunc(ft.staged, func(a, b fire) int { return a.at.Compare(b.at) })

	var out []string
	names := func(fs []fire) string {
		var s []string
		for _, f := range fs {
			n := f.job + "@" + tfmt(t0, f.at)
			if f.behind > 0 {
				n += fmt.Sprintf("(replay %d)", f.behind)
			}
			s = append(s, n)
		}
		return strings.Join(s, " ")
	}
	if at, ok := ft.nextFireAt(now); ok {
		out = append(out, "next fire at "+tfmt(t0, at))
	}
	due := ft.take(now, lead, next)
	for _, b := range batches(byInstant(due), 3) { // commits of at most 3 fires here
		out = append(out, "dispatch "+names(b))
	}
	for _, f := range due {
		if f.gen == ft.gen(f.job) {
			ft.pushAfter(f, now, next)
		}
	}
	if len(ft.staged) > 0 {
		out = append(out, "staged "+names(ft.staged))
	}
	pending := slices.Clone(ft.h)
	slices.SortFunc(pending, func(a, b fire) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.job, b.job)
	})
	var live []fire
	for _, f := range pending {
		if f.gen == ft.gen(f.job) {
			live = append(live, f)
		}
	}
	if len(live) > 0 {
		out = append(out, "heap "+names(live))
	}
	wait, blocker, ok := ft.wake(now, lead)
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

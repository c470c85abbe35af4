package estimate

import (
	"slices"
	"testing"
	"time"
)

// en is an entry that frees nothing as it starts.
func en(needs Res, run time.Duration) Entry { return Entry{Needs: needs, Run: run} }

func TestStarts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	one := Res{CPUs: 1, MemMB: 100}
	two := Res{CPUs: 2, MemMB: 200}
	for _, tc := range []struct {
		name    string
		free    Res
		running []Holding
		waiting []Entry
		want    []time.Time
	}{
		{"free now", one, nil, []Entry{en(one, time.Minute)}, []time.Time{now}},
		{"after the holder", Res{}, []Holding{{one, at(5)}}, []Entry{en(one, 10*time.Minute), en(one, time.Minute)},
			[]time.Time{at(5), at(15)}},
		{"needs two ends", Res{}, []Holding{{one, at(3)}, {one, at(7)}}, []Entry{en(two, time.Minute)}, []time.Time{at(7)}},
		{"in order: a small one behind waits too", Res{}, []Holding{{one, at(3)}, {one, at(7)}},
			[]Entry{en(two, time.Minute), en(one, time.Minute)}, []time.Time{at(7), at(8)}},
		{"overdue holder ends now", Res{}, []Holding{{one, now.Add(-time.Minute)}}, []Entry{en(one, 0)}, []time.Time{now}},
		{"not known", Res{}, []Holding{{one, time.Time{}}}, []Entry{en(one, 0), en(one, 0)}, []time.Time{{}, {}}},
		{"unknown run frees nothing", Res{}, []Holding{{one, at(1)}}, []Entry{en(one, 0), en(one, 0)}, []time.Time{at(1), {}}},
		// A DAEMON shard moving with an overlap: its old task (held, with no end of its own)
		// stops as its replacement starts, so the entry behind starts at the holder's end,
		// not never.
		{"a move's replacement frees its old task", Res{}, []Holding{{one, at(2)}, {one, time.Time{}}},
			[]Entry{{Needs: one, Frees: one}, en(one, 0)}, []time.Time{at(2), at(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Starts(now, tc.free, tc.running, tc.waiting)
			for i := range tc.want {
				if !got[i].Equal(tc.want[i]) {
					t.Fatalf("entry %d: got %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestTracker(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tr Tracker[string]
	tr.Note("a", now, now.Add(10*time.Minute))
	tr.Note("a", now, now.Add(time.Hour)) // the first estimate is kept
	abs, ratio, ok := tr.Started("a", now.Add(8*time.Minute))
	if !ok || abs != 2*time.Minute || ratio != 0.25 {
		t.Fatalf("%v %v %v", abs, ratio, ok)
	}
	if _, _, ok := tr.Started("a", now); ok {
		t.Fatal("measured twice")
	}
	tr.Note("b", now, time.Time{}) // not known: nothing noted
	if tr.Len() != 0 {
		t.Fatal(tr.Len())
	}
}

// TestTrackerUnnoted: a pass yields the executions no Note named since the
// last pass, and they may be forgotten as they are yielded.
func TestTrackerUnnoted(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tr Tracker[int]
	unnoted := func() []int {
		var out []int
		for k := range tr.Unnoted {
			out = append(out, k)
			tr.Forget(k)
		}
		slices.Sort(out)
		return out
	}
	for k := range 3 {
		tr.Note(k, now, now.Add(time.Minute))
	}
	if got := unnoted(); len(got) != 0 {
		t.Fatalf("first pass: %v left, want none", got)
	}
	tr.Note(0, now, now.Add(time.Hour)) // still waiting; 1 and 2 left
	if got := unnoted(); !slices.Equal(got, []int{1, 2}) || tr.Len() != 1 {
		t.Fatalf("second pass: %v left, %d kept; want [1 2] and 1", got, tr.Len())
	}
	if got := unnoted(); !slices.Equal(got, []int{0}) {
		t.Fatalf("third pass: %v left, want [0]", got)
	}
}

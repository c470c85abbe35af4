package estimate

import (
	"testing"
	"time"
)

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
		{"free now", one, nil, []Entry{{one, time.Minute}}, []time.Time{now}},
		{"after the holder", Res{}, []Holding{{one, at(5)}}, []Entry{{one, 10 * time.Minute}, {one, time.Minute}},
			[]time.Time{at(5), at(15)}},
		{"needs two ends", Res{}, []Holding{{one, at(3)}, {one, at(7)}}, []Entry{{two, time.Minute}}, []time.Time{at(7)}},
		{"in order: a small one behind waits too", Res{}, []Holding{{one, at(3)}, {one, at(7)}},
			[]Entry{{two, time.Minute}, {one, time.Minute}}, []time.Time{at(7), at(8)}},
		{"overdue holder ends now", Res{}, []Holding{{one, now.Add(-time.Minute)}}, []Entry{{one, 0}}, []time.Time{now}},
		{"not known", Res{}, []Holding{{one, time.Time{}}}, []Entry{{one, 0}, {one, 0}}, []time.Time{{}, {}}},
		{"unknown run frees nothing", Res{}, []Holding{{one, at(1)}}, []Entry{{one, 0}, {one, 0}}, []time.Time{at(1), {}}},
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
	var tr Tracker
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
	if len(tr.Keys()) != 0 {
		t.Fatal(tr.Keys())
	}
}

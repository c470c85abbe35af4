package nsusage_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
)

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// TestSeriesKeepsAnHour: a namespace keeps its last Keep samples, oldest
// first; fires count on time up to OnTimeBound, fall out with the sample
// they were counted in, and a deleted namespace is dropped.
func TestSeriesKeepsAnHour(t *testing.T) {
	s := nsusage.New()
	s.Reset(t0)
	s.Fired("pay", nsusage.OnTimeBound) // on time: the bound itself
	s.Fired("pay", nsusage.OnTimeBound+time.Millisecond)
	for i := range nsusage.Keep + 5 {
		s.Record(t0.Add(time.Duration(i)*nsusage.Every), map[string]namespace.Resources{
			"pay": {CPUCount: float64(i), MemoryMB: 10}, "search": {}})
		if i == 0 {
			if got := s.Snapshot("pay"); got.Fires != 2 || got.OnTime != 1 {
				t.Fatalf("after the first sample: %d fires, %d on time; want 2, 1", got.Fires, got.OnTime)
			}
			if r, ok := s.Snapshot("pay").Rate(); !ok || r != 0.5 {
				t.Fatalf("rate %v %v; want 0.5", r, ok)
			}
		}
	}
	s.Fired("pay", 0) // since the last sample: counted too
	got := s.Snapshot("pay")
	if len(got.Samples) != nsusage.Keep || got.Samples[0].CPUCount != 5 || got.Samples[nsusage.Keep-1].CPUCount != nsusage.Keep+4 {
		t.Fatalf("%d samples from %v to %v; want the last %d", len(got.Samples), got.Samples[0], got.Samples[len(got.Samples)-1], nsusage.Keep)
	}
	if got.Fires != 1 || got.OnTime != 1 || !got.Since.Equal(t0) {
		t.Errorf("the first fires fell out with their sample: %d fires, %d on time, since %v", got.Fires, got.OnTime, got.Since)
	}
	if _, ok := s.Snapshot("search").Rate(); ok {
		t.Error("search fired nothing: no rate")
	}
	s.Record(t0.Add(time.Hour*2), map[string]namespace.Resources{"pay": {}})
	if got := s.Snapshot("search"); len(got.Samples) != 0 {
		t.Errorf("deleted search kept %d samples", len(got.Samples))
	}
	s.Reset(t0.Add(3 * time.Hour))
	if got := s.Snapshot("pay"); len(got.Samples) != 0 || !got.Since.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("a new term kept %d samples, since %v", len(got.Samples), got.Since)
	}
}

// TestSeriesKeepsLateRuns: a namespace keeps its latest nsusage.KeepLate late
// runs, newest first, of its samples' hour; another namespace's are its
// own; a new term forgets them.
func TestSeriesKeepsLateRuns(t *testing.T) {
	s := nsusage.New()
	s.Reset(t0)
	s.Record(t0, map[string]namespace.Resources{"pay": {}, "search": {}})
	for i := range nsusage.KeepLate + 5 {
		at := t0.Add(time.Duration(i) * time.Second)
		s.Late("search", nsusage.LateRun{Job: "index", TaskID: fmt.Sprint(i), Due: at.Add(-2 * time.Second), At: at, Why: "waited"})
	}
	got := s.Snapshot("search").Late
	if len(got) != nsusage.KeepLate || got[0].TaskID != fmt.Sprint(nsusage.KeepLate+4) || got[nsusage.KeepLate-1].TaskID != "5" {
		t.Fatalf("search's late runs: %d, first %+v", len(got), got[0])
	}
	if late := s.Snapshot("pay").Late; len(late) != 0 {
		t.Errorf("pay's late runs: %+v", late)
	}
	// Past the hour of samples: the runs before the oldest sample go.
	for i := 1; i <= nsusage.Keep+3; i++ {
		s.Record(t0.Add(time.Duration(i)*nsusage.Every), map[string]namespace.Resources{"search": {}})
	}
	if late := s.Snapshot("search").Late; len(late) != 0 {
		t.Errorf("late runs older than the samples' hour: %d", len(late))
	}
	s.Reset(t0.Add(2 * time.Hour))
	if late := s.Snapshot("search").Late; len(late) != 0 {
		t.Errorf("a new term's late runs: %d", len(late))
	}
}

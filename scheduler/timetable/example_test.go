package timetable_test

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/scheduler/timetable"
)

// A job firing every 10 seconds and a workflow every minute, driven as
// the producer drives them: schedule each source (Changed), take what is
// due at a wake (Due), record what landed (Landed) and schedule each
// taken source's next fire (Follow), then sleep until the next wake.
func Example() {
	in := timing.Inputs{Zone: time.UTC}
	schedules := map[string]timing.Schedule{
		"billing":       {Key: "billing", Crons: []string{"0/10 * * * * ?"}},
		"flows~nightly": {Key: "flows~nightly", Crons: []string{"0 * * * * ?"}},
	}
	next := func(source string, after time.Time) (time.Time, uint64, bool) {
		at, ok := in.Next(schedules[source], nil, after)
		return at, 0, ok
	}
	var t timetable.Table
	now := time.Date(2026, 11, 27, 9, 0, 55, 0, time.UTC)
	for source := range schedules {
		t.Changed(source, now, next)
	}
	const lead = time.Second
	for range 3 {
		wait, _, _ := t.Wake(now, lead)
		now = now.Add(wait)
		due := t.Due(now, lead, next)
		for _, f := range due {
			fmt.Printf("woke at %s: %s fires at %s\n", now.Format("15:04:05"), f.Source, f.At.Format("15:04:05"))
			t.Landed(f) // its commit landed
			t.Follow(f, now, next)
		}
	}
	// Output:
	// woke at 09:00:59: billing fires at 09:01:00
	// woke at 09:00:59: flows~nightly fires at 09:01:00
	// woke at 09:01:09: billing fires at 09:01:10
	// woke at 09:01:19: billing fires at 09:01:20
}

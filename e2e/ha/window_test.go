//go:build e2e

package ha

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cron windows fixed in advance. A job's fires are listed explicitly (whole
// seconds, UTC) and written as Quartz crons with a year field, one job per
// minute they touch (a cron cannot express a span across a minute boundary
// and nothing else), so the number of executions each job owes is known
// exactly whatever happens to the cluster meanwhile.

// planLead is how far ahead of its first fire a test plans its window:
// the jobs must be registered before it begins (a busy machine can take
// seconds).
const planLead = 8 * time.Second

// windowJob is one job of a window: its cron and the fires it owes.
type windowJob struct {
	name  string
	cron  string
	fires []time.Time
}

// every lists the instants from `from` to `to` (inclusive) step apart.
func every(from, to time.Time, step time.Duration) []time.Time {
	var out []time.Time
	for at := from; !at.After(to); at = at.Add(step) {
		out = append(out, at)
	}
	return out
}

// windowJobs splits fires (whole seconds) into one cron per minute, the
// jobs named prefix-HHMM.
func windowJobs(prefix string, fires []time.Time) []windowJob {
	byMinute := map[time.Time][]time.Time{}
	for _, f := range fires {
		f = f.UTC()
		if f.Nanosecond() != 0 {
			panic("windowJobs: fires must be whole seconds")
		}
		m := f.Truncate(time.Minute)
		byMinute[m] = append(byMinute[m], f)
	}
	var out []windowJob
	for m, fs := range byMinute {
		sort.Slice(fs, func(i, j int) bool { return fs[i].Before(fs[j]) })
		secs := make([]string, len(fs))
		for i, f := range fs {
			secs[i] = strconv.Itoa(f.Second())
		}
		out = append(out, windowJob{name: fmt.Sprintf("%s-%s", prefix, m.Format("1504")), fires: fs,
			cron: fmt.Sprintf("%s %d %d %d %d ? %d", strings.Join(secs, ","), m.Minute(), m.Hour(), m.Day(), int(m.Month()), m.Year())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].fires[0].Before(out[j].fires[0]) })
	return out
}

// planJobs registers, through via, jobs fixed in advance: misfire=true
// jobs named prefix-HHMM with `shards` shards sleeping `sleep` s, firing
// every 2 s from start to end, and a one-shard misfire=false job gap-HHMM
// firing at every slot and the second after. The test fails if the
// registrations end after start (the plan would not hold). It returns the
// misfire=true jobs.
func (c *cluster) planJobs(via *instance, prefix string, start, end time.Time, shards int, sleep float64, slots []time.Time) []windowJob {
	c.t.Helper()
	exact := windowJobs(prefix, every(start, end, 2*time.Second))
	for _, j := range exact {
		c.register(via, c.newJob(j.name, j.cron, shards, sleep, true))
	}
	for _, j := range windowJobs("gap", slotFires(slots)) {
		c.register(via, c.newJob(j.name, j.cron, 1, 0.1, false))
	}
	if time.Now().After(start) {
		c.t.Fatalf("registering the jobs ended after their window began (%v): the plan no longer holds", start)
	}
	return exact
}

func TestWindowJobs(t *testing.T) {
	from := time.Date(2026, 11, 22, 12, 58, 50, 0, time.UTC)
	js := windowJobs("x", every(from, from.Add(20*time.Second), 4*time.Second))
	want := []windowJob{
		{name: "x-1258", cron: "50,54,58 58 12 22 11 ? 2026"},
		{name: "x-1259", cron: "2,6,10 59 12 22 11 ? 2026"},
	}
	if len(js) != len(want) {
		t.Fatalf("got %d jobs %v, want %v", len(js), js, want)
	}
	for i, w := range want {
		if js[i].name != w.name || js[i].cron != w.cron || len(js[i].fires) != 3 {
			t.Errorf("job %d = %+v, want %+v with 3 fires", i, js[i], w)
		}
	}
}

func TestSlotsFromKeepParity(t *testing.T) {
	from := time.Date(2026, 11, 22, 19, 30, 49, 0, time.UTC)
	for off := range 60 {
		first := from.Add(time.Duration(off) * time.Second)
		for i, s := range slotsFrom(first, 6*time.Second, 12) {
			if d := s.Sub(first); d%(2*time.Second) != 0 || s.Add(time.Second).Minute() != s.Minute() {
				t.Fatalf("slot %d from %s is %s (%v on): want an even number of seconds on, with its next second in the same minute",
					i, first.Format("15:04:05"), s.Format("15:04:05"), d)
			}
		}
	}
}

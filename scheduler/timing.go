package scheduler

import (
	"container/heap"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/round"
)

// fireTimes is the producer's timing: the heap of the jobs' next fires,
// their generations, the fires staged ahead of their instant and the
// ready entries believed present. Its methods decide which fires go now
// (take) and when to wake next (wake) from now, the lead and the jobs'
// schedules: they read no clock, take no lock and do no I/O of their own
// (a job's schedule comes in as a function), so the producer calls them
// under its one lock and tests drive them with plain values
// (testdata/timing/*.txt).
type fireTimes struct {
	h     fireHeap
	marks map[string]jobMark // per job: its generation and the last instant taken
	// staged are the fires taken from the heap ahead of their instant
	// (staged, or being committed) whose instant may not have come yet,
	// soonest first: nextFires and nextFireAt still count them, so a
	// launch round that read the queues before such a fire's commit
	// neither filters declined resources past its instant nor lends its
	// space as if the job's next fire were the one after (a decline filter
	// issued in that window would hold the fire for the filter's length).
	staged []fire
	// queued[job] is true while the job is believed to have a ready entry
	// (set by the producer's own commits and the store's watch); nil until
	// the watch feeds it.
	queued map[string]bool
	// replay is how many missed instants in a row a job's late fires
	// replay (resume): its pending cap for a misfire=true job, 0 for a
	// misfire=false one (nil: none replays).
	replay func(job string) int
	// rebuilding, while every job's schedule is worked out again
	// (Producer.rescheduleAll), holds the jobs pushed meanwhile: their
	// schedule stands when the rebuilt one replaces the rest (nil: none).
	rebuilding map[string]bool
}

// schedule is a job's next fire strictly after a time (false: none: the
// job may not run, is no transient job, or has no later instant), and the
// fingerprint of the job's configuration it was computed from (fire.config;
// 0: none known).
type schedule func(job string, after time.Time) (at time.Time, config uint64, ok bool)

// jobMark is what fireTimes keeps per job: one map entry, a job's two
// words (at 100,000 jobs a second map would cost its keys again).
type jobMark struct {
	gen  uint64 // heap entries with an older one are stale
	last int64  // the latest instant taken for the job (Unix ns; 0: none yet)
}

func (t *fireTimes) init() {
	if t.marks == nil {
		t.marks = map[string]jobMark{}
	}
}

// gen is job's generation: its heap entries with another are stale.
func (t *fireTimes) gen(job string) uint64 { return t.marks[job].gen }

// lastTaken is the latest instant of job's fires taken (zero: none).
func (t *fireTimes) lastTaken(job string) time.Time {
	if n := t.marks[job].last; n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

func (t *fireTimes) believedAbsent(job string) bool { return !t.queued[job] }

// push schedules job's next fire strictly after `after`, bumping its
// generation so older heap entries are ignored.
func (t *fireTimes) push(job string, after time.Time, next schedule) {
	t.pushBehind(job, after, 0, next)
}

// pushBehind is push for a fire that replays the behind-th missed
// instant in a row (resume).
func (t *fireTimes) pushBehind(job string, after time.Time, behind int, next schedule) {
	if t.rebuilding != nil {
		t.rebuilding[job] = true
	}
	m := t.marks[job]
	m.gen++
	t.marks[job] = m
	if at, config, ok := next(job, after); ok {
		heap.Push(&t.h, fire{at: at, job: job, gen: m.gen, prev: after, behind: behind, config: config})
	}
}

// replaceAll makes plans (a fire per job; a zero at: none) the heap,
// ending a rebuild: the entries of the jobs pushed while it ran stay, and
// theirs of plans are dropped; every other job's generation is bumped.
func (t *fireTimes) replaceAll(plans []fire) {
	kept := t.rebuilding
	t.rebuilding = nil
	h := t.h[:0]
	for _, f := range t.h {
		if kept[f.job] && f.gen == t.gen(f.job) {
			h = append(h, f)
		}
	}
	for _, f := range plans {
		if f.job == "" || kept[f.job] {
			continue
		}
		m := t.marks[f.job]
		m.gen++
		t.marks[f.job] = m
		if !f.at.IsZero() {
			f.gen = m.gen
			h = append(h, f)
		}
	}
	t.h = h
	heap.Init(&t.h)
}

// pushAfter schedules the fire that follows f, taken at now (resume).
func (t *fireTimes) pushAfter(f fire, now time.Time, next schedule) {
	after, behind := t.resume(f, now, next)
	t.pushBehind(f.job, after, behind, next)
}

// held tells whether a fire must wait for its instant instead of being
// staged ahead by lead: the lead is more than half the job's period and
// its job still has a ready entry (the last fire not launched yet).
// Staged then, the fire would meet that entry before the launcher had
// even half the period it has without a lead (with a lead longer than the
// period, before the last fire's own instant): a misfire=false job would
// lose fires and a misfire=true job would bunch them. A held fire also
// holds every later instant (the heap's order): the watermark written with
// each commit says every fire up to it was committed, so no later instant
// may be committed before it.
func (t *fireTimes) held(f fire, now time.Time, lead time.Duration) bool {
	return f.at.After(now) && 2*lead > f.at.Sub(f.prev) && !t.believedAbsent(f.job)
}

// wake is when the producer wakes next: wait from now, at the soonest
// fire's instant less the lead, or at its instant when it is held (then
// blocker names its job: that job's ready entry leaving wakes it sooner).
// ok is false when no fire is scheduled. Stale heads are dropped.
func (t *fireTimes) wake(now time.Time, lead time.Duration) (wait time.Duration, blocker string, ok bool) {
	for len(t.h) > 0 && t.h[0].gen != t.gen(t.h[0].job) {
		heap.Pop(&t.h)
	}
	if len(t.h) == 0 {
		return 0, "", false
	}
	head := t.h[0]
	if t.held(head, now, lead) {
		return head.at.Sub(now), head.job, true // at its instant, or when its job's entry leaves
	}
	return max(head.at.Sub(now)-lead, 0), "", true
}

// take pops the fires to commit now: those due by now+lead, up to the
// first held one, and never past the instant of a taken job's following
// fire (it is scheduled once this one is committed, and the watermark must
// not pass a fire not committed yet). Fires taken ahead of their instant
// are noted as staged; each instant becomes its job's latest (lastTaken)
// once its commit lands (noteTaken: a void fire is not taken).
func (t *fireTimes) take(now time.Time, lead time.Duration, next schedule) []fire {
	var due []fire
	until := now.Add(lead)
	for len(t.h) > 0 && !t.h[0].at.After(until) {
		f := t.h[0]
		if f.gen != t.gen(f.job) {
			heap.Pop(&t.h)
			continue
		}
		if t.held(f, now, lead) {
			// Stop before its instant: the fires of the instants before it go
			// now, its own instant's and later ones at its instant at the latest.
			for len(due) > 0 && due[len(due)-1].at.Equal(f.at) {
				heap.Push(&t.h, due[len(due)-1])
				due = due[:len(due)-1]
			}
			break
		}
		due = append(due, heap.Pop(&t.h).(fire))
		t.noteStaged(f, now)
		from, _ := t.resume(f, now, next)
		if after, _, ok := next(f.job, from); ok && !after.After(until) {
			until = after.Add(-time.Nanosecond)
		}
	}
	return due
}

// resume is what the fire after f (taken at now) is computed from, and
// how many missed instants in a row that fire replays: f's instant when
// the fire after it has not come yet; when it has (the producer stalled,
// or a commit took longer than a period), still f's instant for a job
// that replays missed instants (misfire=true: each runs, up to its
// pending cap in a row, whatever made the fire late), and now for one
// that does not (misfire=false: the skipped instants collapse into this
// fire, and the job fires on schedule from now).
func (t *fireTimes) resume(f fire, now time.Time, next schedule) (time.Time, int) {
	if after, _, ok := next(f.job, f.at); !ok || after.After(now) {
		return f.at, 0
	}
	if t.replay != nil && f.behind < t.replay(f.job) {
		return f.at, f.behind + 1
	}
	return now, 0
}

// noteTaken records f's instant, committed, as its job's latest taken.
func (t *fireTimes) noteTaken(f fire) {
	m := t.marks[f.job]
	if n := f.at.UnixNano(); n > m.last {
		m.last = n
		t.marks[f.job] = m
	}
}

// pruneStaged forgets the staged fires due at or before now, moving the
// rest to the front: the array is reused, never longer than the most
// fires staged at once.
func (t *fireTimes) pruneStaged(now time.Time) {
	i := 0
	for i < len(t.staged) && !t.staged[i].at.After(now) {
		i++
	}
	if i > 0 {
		t.staged = t.staged[:copy(t.staged, t.staged[i:])]
	}
}

// noteStaged remembers a fire taken from the heap before its instant.
func (t *fireTimes) noteStaged(f fire, now time.Time) {
	if !f.at.After(now) {
		return
	}
	t.pruneStaged(now) // also while no round asks (nextFires): the list holds a lead's fires, not every fire since
	i, _ := slices.BinarySearchFunc(t.staged, f.at, func(s fire, at time.Time) int {
		if s.at.After(at) {
			return 1
		}
		return -1 // after the equal ones
	})
	t.staged = slices.Insert(t.staged, i, f)
}

// nextFires lists the next fire of each job keep accepts, at or before
// until, soonest first (a fire staged ahead and not yet due is its job's
// next).
func (t *fireTimes) nextFires(now, until time.Time, keep func(job string) bool) []round.Fire {
	t.pruneStaged(now)
	var out []round.Fire
	var seen map[string]bool
	for _, f := range t.staged {
		if seen == nil {
			seen = map[string]bool{}
		}
		if !seen[f.job] && !f.at.After(until) && keep(f.job) {
			out = append(out, round.Fire{Job: f.job, At: f.at})
		}
		seen[f.job] = true
	}
	for _, f := range t.h {
		if f.gen == t.gen(f.job) && !seen[f.job] && !f.at.After(until) && keep(f.job) {
			out = append(out, round.Fire{Job: f.job, At: f.at})
		}
	}
	slices.SortFunc(out, func(a, b round.Fire) int { return a.At.Compare(b.At) })
	return out
}

// nextFireAt is the soonest instant of a next fire, a staged one included
// (ok false: none).
func (t *fireTimes) nextFireAt(now time.Time) (time.Time, bool) {
	t.pruneStaged(now)
	var at time.Time
	if len(t.h) > 0 {
		at = t.h[0].at
	}
	if len(t.staged) > 0 && (at.IsZero() || t.staged[0].at.Before(at)) {
		at = t.staged[0].at
	}
	return at, !at.IsZero()
}

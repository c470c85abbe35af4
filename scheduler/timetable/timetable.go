// Package timetable is when every source that fires on a clock (a job, a
// workflow) fires next: one heap of next instants, each source's
// generation and the latest instant it took, the fires staged ahead of
// their instant, the ready entries believed present, and the misfire
// rule that decides what a late fire's follower is computed from. Pure:
// it reads no clock, takes no lock and does no I/O; a source's schedule
// comes in as a function (Next), so the producer drives it under its one
// lock and tests with plain values (testdata/*.txt).
package timetable

import (
	"container/heap"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/round"
)

// Fire is one source's next instant.
type Fire struct {
	At     time.Time
	Source string
	Gen    uint64    // the source's generation it was computed in (Table.Gen: older ones are stale)
	Prev   time.Time // what At was computed after: the source's last instant, or when it was (re)scheduled
	Behind int       // how many missed instants in a row this fire replays (Table.Follow)
	// Config is the fingerprint of the source's stored configuration At
	// was computed from (a fire is void if the configuration is another
	// when it commits); 0: unknown.
	Config uint64
}

// Next is a source's schedule: its next instant strictly after `after`
// (false: none: the source may not fire, or has no later instant), and
// the fingerprint of the configuration it was computed from (Fire.Config;
// 0: none known).
type Next func(source string, after time.Time) (at time.Time, config uint64, ok bool)

// Table is the timetable. The zero value is empty and ready.
type Table struct {
	h     fireHeap
	marks map[string]mark // per source: its generation and the last instant taken
	// staged are the fires taken ahead of their instant (staged, or being
	// committed) whose instant may not have come yet, soonest first:
	// NextFires and NextFireAt still count them, so a launch round that
	// read the queues before such a fire's commit neither filters declined
	// resources past its instant nor lends its space as if the source's
	// next fire were the one after (a decline filter issued in that window
	// would hold the fire for the filter's length).
	staged []Fire
	// queued[source] is true while the source is believed to have a ready
	// entry (set by the producer's own commits and the store's watch); nil
	// until the watch feeds it.
	queued map[string]bool
	// Replay is how many missed instants in a row a source's late fires
	// replay (Follow): its pending cap for a misfire=true source, 0 for a
	// misfire=false one (nil: none replays).
	Replay func(source string) int
	// rebuilding, while every source's schedule is worked out again
	// (Rebuild), holds the sources changed meanwhile: their schedule stands
	// when the rebuilt one replaces the rest (nil: none).
	rebuilding map[string]bool
	// ver counts the changes to the heap's sources (Changed, Follow,
	// Replace); stop is the fire the last Due stopped at, with the ver and
	// lead it was found at (its source zero: none). A fire held for its
	// source's ready entry holds every fire of its instant, and the
	// producer wakes again on every ready entry that leaves (one a
	// launch): Due taking and putting back the whole instant (and working
	// out each one's follower twice) on each of those wakes cost work in
	// proportion to the sources firing at that instant when nothing that
	// decides the outcome had changed. It has not while ver and lead are
	// the same, the instant has not come and its source is still believed
	// queued (another source's entry coming or going releases no fire of
	// the instant: the held one still holds them all).
	ver  uint64
	stop heldFire
}

// heldFire is the fire a Due stopped at (held), and when.
type heldFire struct {
	source string
	at     time.Time
	lead   time.Duration
	ver    uint64
}

// mark is what the table keeps per source: one map entry, a source's two
// words (at 100,000 jobs a second map would cost its keys again).
type mark struct {
	gen  uint64 // heap entries with an older one are stale
	last int64  // the latest instant taken for the source (Unix ns; 0: none yet)
}

// Gen is source's generation: its heap entries with another are stale.
func (t *Table) Gen(source string) uint64 { return t.marks[source].gen }

// LastTaken is the latest instant of source's fires that landed (zero:
// none).
func (t *Table) LastTaken(source string) time.Time {
	if n := t.marks[source].last; n != 0 {
		return time.Unix(0, n).UTC()
	}
	return time.Time{}
}

// NoteQueued records whether source has a ready entry (the store's watch,
// the producer's own commits).
func (t *Table) NoteQueued(source string, present bool) {
	if t.queued == nil {
		t.queued = map[string]bool{}
	}
	if present {
		t.queued[source] = true
	} else {
		delete(t.queued, source)
	}
}

// Believes reports whether the ready entries are known (NoteQueued was
// fed): before, nothing is believed absent for sure.
func (t *Table) Believes() bool { return t.queued != nil }

// BelievedAbsent reports a source believed to have no ready entry.
func (t *Table) BelievedAbsent(source string) bool { return !t.queued[source] }

// Changed schedules source's next fire strictly after `after` (its
// schedule changed, or it is scheduled anew), bumping its generation so
// its older heap entries are ignored.
func (t *Table) Changed(source string, after time.Time, next Next) {
	t.changedBehind(source, after, 0, next)
}

// changedBehind is Changed for a fire that replays the behind-th missed
// instant in a row (Follow).
func (t *Table) changedBehind(source string, after time.Time, behind int, next Next) {
	if t.rebuilding != nil {
		t.rebuilding[source] = true
	}
	if t.marks == nil {
		t.marks = map[string]mark{}
	}
	m := t.marks[source]
	m.gen++
	t.marks[source] = m
	t.ver++
	if at, config, ok := next(source, after); ok {
		heap.Push(&t.h, Fire{At: at, Source: source, Gen: m.gen, Prev: after, Behind: behind, Config: config})
	}
}

// Rebuild starts working every source's schedule out again: the sources
// Changed until Replace keep that schedule. While it runs Rebuilding is
// true.
func (t *Table) Rebuild() { t.rebuilding = map[string]bool{} }

// Rebuilding reports a rebuild under way.
func (t *Table) Rebuilding() bool { return t.rebuilding != nil }

// Replace makes plans (a fire per source; a zero At: none) the heap,
// ending a rebuild: the entries of the sources Changed while it ran stay,
// and theirs of plans are dropped; every other source's generation is
// bumped.
func (t *Table) Replace(plans []Fire) {
	kept := t.rebuilding
	t.rebuilding = nil
	t.ver++
	if t.marks == nil {
		t.marks = map[string]mark{}
	}
	h := t.h[:0]
	for _, f := range t.h {
		if kept[f.Source] && f.Gen == t.Gen(f.Source) {
			h = append(h, f)
		}
	}
	for _, f := range plans {
		if f.Source == "" || kept[f.Source] {
			continue
		}
		m := t.marks[f.Source]
		m.gen++
		t.marks[f.Source] = m
		if !f.At.IsZero() {
			f.Gen = m.gen
			h = append(h, f)
		}
	}
	t.h = h
	heap.Init(&t.h)
}

// Follow schedules the fire that follows f, taken at now, by the misfire
// rule (resume).
func (t *Table) Follow(f Fire, now time.Time, next Next) {
	if f.Gen != t.Gen(f.Source) { // changed since it was taken: that schedule stands
		return
	}
	after, behind := t.resume(f, now, next)
	t.changedBehind(f.Source, after, behind, next)
}

// held tells whether a fire must wait for its instant instead of being
// staged ahead by lead: the lead is more than half the source's period
// and it still has a ready entry (the last fire not launched yet). Staged
// then, the fire would meet that entry before the launcher had even half
// the period it has without a lead (with a lead longer than the period,
// before the last fire's own instant): a misfire=false source would lose
// fires and a misfire=true one would bunch them. A held fire also holds
// every later instant (the heap's order): the watermark written with each
// commit says every fire up to it was committed, so no later instant may
// be committed before it.
func (t *Table) held(f Fire, now time.Time, lead time.Duration) bool {
	return f.At.After(now) && 2*lead > f.At.Sub(f.Prev) && !t.BelievedAbsent(f.Source)
}

// Wake is when to wake next: wait from now, at the soonest fire's instant
// less the lead, or at its instant when it is held (then blocker names its
// source: that source's ready entry leaving may wake it sooner). ok is
// false when no fire is scheduled. Stale heads are dropped.
func (t *Table) Wake(now time.Time, lead time.Duration) (wait time.Duration, blocker string, ok bool) {
	for len(t.h) > 0 && t.h[0].Gen != t.Gen(t.h[0].Source) {
		heap.Pop(&t.h)
	}
	if len(t.h) == 0 {
		return 0, "", false
	}
	head := t.h[0]
	if t.held(head, now, lead) {
		return head.At.Sub(now), head.Source, true // at its instant, or when its source's entry leaves
	}
	return max(head.At.Sub(now)-lead, 0), "", true
}

// Due pops the fires to commit now: those due by now+lead, up to the
// first held one, and never past the instant of a taken source's
// following fire (it is scheduled once this one is committed, and the
// watermark must not pass a fire not committed yet). Fires taken ahead of
// their instant are noted as staged; each instant becomes its source's
// latest (LastTaken) once its commit lands (Landed: a void fire is not
// taken). Each fire's follower is scheduled by Follow once it landed or
// was found void.
func (t *Table) Due(now time.Time, lead time.Duration, next Next) []Fire {
	if h := t.stop; h.source != "" && h.ver == t.ver && h.lead == lead && h.at.After(now) && !t.BelievedAbsent(h.source) {
		return nil // still held, by what held it last (Table.stop)
	}
	t.stop = heldFire{}
	var due []Fire
	until := now.Add(lead)
	for len(t.h) > 0 && !t.h[0].At.After(until) {
		f := t.h[0]
		if f.Gen != t.Gen(f.Source) {
			heap.Pop(&t.h)
			continue
		}
		if t.held(f, now, lead) {
			// Stop before its instant: the fires of the instants before it go
			// now, its own instant's and later ones at its instant at the latest.
			for len(due) > 0 && due[len(due)-1].At.Equal(f.At) {
				heap.Push(&t.h, due[len(due)-1])
				due = due[:len(due)-1]
			}
			t.stop = heldFire{source: f.Source, at: f.At, lead: lead, ver: t.ver}
			break
		}
		due = append(due, heap.Pop(&t.h).(Fire))
		from, _ := t.resume(f, now, next)
		if after, _, ok := next(f.Source, from); ok && !after.After(until) {
			until = after.Add(-time.Nanosecond)
		}
	}
	for _, f := range due { // the fires put back for a held one were not taken
		t.noteStaged(f, now)
	}
	return due
}

// resume is what the fire after f (taken at now) is computed from, and
// how many missed instants in a row that fire replays: f's instant when
// the fire after it has not come yet; when it has (the producer stalled,
// or a commit took longer than a period), still f's instant for a source
// that replays missed instants (misfire=true: each runs, up to its
// pending cap in a row, whatever made the fire late), and now for one
// that does not (misfire=false: the skipped instants collapse into this
// fire, and the source fires on schedule from now).
func (t *Table) resume(f Fire, now time.Time, next Next) (time.Time, int) {
	if after, _, ok := next(f.Source, f.At); !ok || after.After(now) {
		return f.At, 0
	}
	if t.Replay != nil && f.Behind < t.Replay(f.Source) {
		return f.At, f.Behind + 1
	}
	return now, 0
}

// Landed records f's instant, committed, as its source's latest taken.
func (t *Table) Landed(f Fire) {
	if t.marks == nil {
		t.marks = map[string]mark{}
	}
	m := t.marks[f.Source]
	if n := f.At.UnixNano(); n > m.last {
		m.last = n
		t.marks[f.Source] = m
	}
}

// pruneStaged forgets the staged fires due at or before now, moving the
// rest to the front: the array is reused, never longer than the most
// fires staged at once.
func (t *Table) pruneStaged(now time.Time) {
	i := 0
	for i < len(t.staged) && !t.staged[i].At.After(now) {
		i++
	}
	if i > 0 {
		t.staged = t.staged[:copy(t.staged, t.staged[i:])]
	}
}

// noteStaged remembers a fire taken before its instant.
func (t *Table) noteStaged(f Fire, now time.Time) {
	if !f.At.After(now) {
		return
	}
	t.pruneStaged(now) // also while no round asks (NextFires): the list holds a lead's fires, not every fire since
	i, _ := slices.BinarySearchFunc(t.staged, f.At, func(s Fire, at time.Time) int {
		if s.At.After(at) {
			return 1
		}
		return -1 // after the equal ones
	})
	t.staged = slices.Insert(t.staged, i, f)
}

// NextFires lists the next fire of each source keep accepts, at or before
// until, soonest first (a fire staged ahead and not yet due is its
// source's next).
func (t *Table) NextFires(now, until time.Time, keep func(source string) bool) []round.Fire {
	t.pruneStaged(now)
	var out []round.Fire
	var seen map[string]bool
	for _, f := range t.staged {
		if seen == nil {
			seen = map[string]bool{}
		}
		if !seen[f.Source] && !f.At.After(until) && keep(f.Source) {
			out = append(out, round.Fire{Job: f.Source, At: f.At})
		}
		seen[f.Source] = true
	}
	for _, f := range t.h {
		if f.Gen == t.Gen(f.Source) && !seen[f.Source] && !f.At.After(until) && keep(f.Source) {
			out = append(out, round.Fire{Job: f.Source, At: f.At})
		}
	}
	slices.SortFunc(out, func(a, b round.Fire) int { return a.At.Compare(b.At) })
	return out
}

// NextFireAt is the soonest instant of a next fire, a staged one included
// (ok false: none).
func (t *Table) NextFireAt(now time.Time) (time.Time, bool) {
	t.pruneStaged(now)
	var at time.Time
	if len(t.h) > 0 {
		at = t.h[0].At
	}
	if len(t.staged) > 0 && (at.IsZero() || t.staged[0].At.Before(at)) {
		at = t.staged[0].At
	}
	return at, !at.IsZero()
}

// Missed lists a source's instants in (from, to] that no one fired, by
// its misfire rule, at most limit: every one for a misfire=true source
// (each runs), the first alone for a misfire=false one (they collapse
// into one execution, which serves the first). next is the source's
// schedule (its next instant strictly after a time; false: none).
func Missed(next func(after time.Time) (time.Time, bool), from, to time.Time, limit int, misfire bool) []time.Time {
	if !misfire {
		limit = min(limit, 1)
	}
	var out []time.Time
	for t := from; len(out) < limit; {
		at, ok := next(t)
		if !ok || at.After(to) {
			break
		}
		out = append(out, at)
		t = at
	}
	return out
}

type fireHeap []Fire

func (h fireHeap) Len() int { return len(h) }
func (h fireHeap) Less(i, j int) bool {
	if !h[i].At.Equal(h[j].At) {
		return h[i].At.Before(h[j].At)
	}
	return h[i].Source < h[j].Source
}
func (h fireHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fireHeap) Push(x any)   { *h = append(*h, x.(Fire)) }
func (h *fireHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

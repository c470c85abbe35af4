package soak

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// execution is one launch of a job's shards from one ready entry: the
// shard-0 run (others follow it), or any shard when shard 0 is absent.
type execution struct {
	queued, start, end time.Time
	misfire            bool
	// nominal is the cron instant the execution serves, as the scheduler
	// recorded it (zero: not recorded: a trigger, a run of an
	// older scheduler).
	nominal time.Time
}

// executions groups a job's non-failover, non-trigger runs by queued
// instant (all shards of one execution share it).
func executions(rs []run) []execution {
	m := map[time.Time]*execution{}
	for _, r := range rs {
		if !onTime(r) || key(r) != "" || r.Queued.IsZero() {
			continue
		}
		q := r.Queued.UTC()
		e := m[q]
		if e == nil {
			e = &execution{queued: q, start: r.At, end: r.end}
			m[q] = e
		}
		if r.At.Before(e.start) {
			e.start = r.At
		}
		if r.end.IsZero() || r.end.After(e.end) {
			e.end = maxTime(e.end, r.end)
		}
		e.misfire = e.misfire || r.Source == "MISFIRE"
		if e.nominal.IsZero() && !r.Nominal.IsZero() {
			e.nominal = r.Nominal.UTC()
		}
	}
	out := make([]execution, 0, len(m))
	for _, e := range m {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b execution) int { return a.queued.Compare(b.queued) })
	return out
}

// checkFires judges a job's history against its expected fires (je): every fire must have had one
// of the fates its expectation grants. An execution that carries its instant is that fire's
// (matchNominal); one without (a run of an older scheduler, a failover) belongs to the last fire at
// or before its queueing. The fates are then tried in a fixed order, each only where granted:
//
//   - OwnRun: the NORMAL execution queued from the fire's instant to the next (before its window's
//     change had surely landed);
//   - Replay: the first free MISFIRE execution queued from stagedFrom and before the cut, else one
//     taken from another fire along an augmenting path (replays);
//   - Collapse: an execution (a trigger's too) pending or running from the instant to queuedBy, a
//     task lost before it started held meanwhile, an execution rolled back and queued again, a
//     never-started launch's relaunch, or an execution serving an earlier instant queued after this
//     one's (the producer behind);
//   - CatchUp: the next execution is a MISFIRE one, or the one after the next fire's, when that one
//     may be this fire's launch rolled back and queued again behind it;
//   - Cleared, Relaunch, LostBeforeStart; Stall last (counted, not lost); Backlog for the last lost
//     ones, up to pending.
//
// Executions left unmatched inside a window are unexplained, unless an edge fire takes them.
func (rep *Report) checkFires(j Job, je jobExpect, rs []run, slack time.Duration, end time.Time, faults []Fault, pending int, nr []*notRun) int {
	if je.err != nil {
		rep.add(LostFire, j.Name, "%v", je.err)
		return 0
	}
	ex := executions(rs)
	used := make([]bool, len(ex))
	fo := map[string]bool{} // FAILOVER runs already counted for a fire
	open, stray := rep.matchNominal(ex, used, je.fires)
	rep.checkEarly(j.Name, ex)
	var rest, stalls []expect
	for _, f := range open {
		if f.may(OwnRun) {
			i := sort.Search(len(ex), func(i int) bool { return !ex[i].queued.Before(f.at) })
			for ; i < len(ex) && (used[i] || ex[i].misfire); i++ {
			}
			if i < len(ex) && ex[i].queued.Before(f.next) && (f.closed.IsZero() || !ex[i].queued.After(f.closed)) {
				used[i] = true
				continue
			}
		}
		// a fire a stall may have skipped is tried last: it takes what the others leave over
		if f.may(Stall) {
			stalls = append(stalls, f)
		} else {
			rest = append(rest, f)
		}
	}
	m := replays{ex: ex, used: used, rs: rs, fo: fo, owner: map[int]expect{}, foOwner: map[string]expect{}}
	var lost []expect
	for _, f := range append(rest, stalls...) {
		if f.may(Replay) {
			i := sort.Search(len(ex), func(i int) bool { return !ex[i].queued.Before(f.stagedFrom) })
			for ; i < len(ex) && (used[i] || !ex[i].misfire); i++ {
			}
			if i < len(ex) && (f.cut.IsZero() || ex[i].queued.Before(f.cut)) { // a change clears what is still pending
				used[i] = true
				m.owner[i] = f
				continue
			}
			if f.may(Cleared) && cleared(rs, f.fire, true) {
				continue
			}
			if m.augment(f, visit{ex: map[int]bool{}, fo: map[string]bool{}}) {
				continue
			}
		}
		if f.may(Collapse) && (busy(rs, f, slack, faults, j.Sent) || (f.may(LostBeforeStart) && heldNotRun(nr, f.fire, slack, f.queuedBy))) {
			continue
		}
		if f.may(CatchUp) {
			i := sort.Search(len(ex), func(i int) bool { return ex[i].queued.After(f.at) })
			if i < len(ex) && ex[i].misfire {
				used[i] = true
				continue
			}
			// a launch of f rolled back (its ACCEPT failed) is queued again as a misfire behind
			// what is pending by then: the next fire's execution, so the MISFIRE one right after it
			if k := i + 1; k < len(ex) && !ex[i].misfire && !ex[i].queued.Before(f.next) && ex[k].misfire && !used[k] &&
				requeuedBehind(rs, j.Sent, f.fire, ex[i], ex[k], slack) {
				used[k] = true
				continue
			}
		}
		if f.may(Collapse) && (collapsedIntoRequeued(rs, f.fire) || collapsedIntoRelaunch(rs, f) || stalledBehind(ex, f.fire)) {
			continue
		}
		if (f.may(Cleared) && cleared(rs, f.fire, f.misfire)) || (f.may(Relaunch) && relaunched(rs, f, fo)) ||
			(f.may(LostBeforeStart) && takeNotRun(nr, f, f.queuedBy)) {
			continue
		}
		if f.may(Stall) {
			rep.Stalled++
			continue
		}
		lost = append(lost, f)
	}
	// the last ones may wait in the backlog
	slices.SortFunc(lost, func(a, b expect) int { return a.at.Compare(b.at) })
	for n := min(pending, len(lost)); n > 0 && lost[len(lost)-1].may(Backlog); n-- {
		rep.Pending++
		lost = lost[:len(lost)-1]
	}
	for _, f := range lost {
		rep.add(LostFire, j.Name, "fire %s (misfire=%v) neither ran nor was accounted for by the misfire rule (expected by %s; queued by %s)",
			f.at.UTC().Format("15:04:05"), j.Misfire, strings.Join(f.rules, ", "), f.queuedBy.UTC().Format("15:04:05.000"))
	}
	taken := make([]bool, len(je.edge))
	rep.checkStray(j.Name, slices.DeleteFunc(stray, func(e execution) bool { return unknownAt(j, e.nominal, slack) || atOpening(j, e.nominal, slack) }), je.edge, taken, end, slack)
	for i, e := range ex {
		if used[i] || !inAny(j.Windows, e.queued, slack) || (!j.Misfire && e.misfire) || takeEdge(je.edge, taken, e) {
			continue
		}
		rep.add(ExtraRun, j.Name, "execution queued %s matches no fire", e.queued.Format("15:04:05.000"))
	}
	return len(je.fires)
}

// unknownAt: the job was out of the checks at instant t (Job.Unchecked,
// within slack before it: the change may have landed as it was sent).
func unknownAt(j Job, t time.Time, slack time.Duration) bool {
	return !j.Unchecked.IsZero() && !t.Before(j.Unchecked.Add(-slack))
}

// atOpening: instant t is within slack before a window's From (the change's answer; Opening, its
// sending, unknown): the change may have committed before t and fired it. Matched by its recorded
// instant, such an execution is that fire's; two of them are a duplicate (checkDuplicates).
func atOpening(j Job, t time.Time, slack time.Duration) bool {
	for _, w := range j.Windows {
		if w.Opening.IsZero() && !t.Before(w.From.Add(-slack)) && !t.After(w.From) {
			return true
		}
	}
	return false
}

// requeuedBehind: rq, the MISFIRE execution right after the next fire's (next), may be fire f's
// launch rolled back and queued again behind it: its queueing instant is when the execution ahead
// of it in the entry was taken, that is next's launch (by stageLead after f's next instant, or by
// next's start), or the launch of a trigger sent meanwhile, which launches first (an execution with
// an override leads its entry) and started, or ran as FAILOVER, from then on.
func requeuedBehind(rs []run, sent map[string]time.Time, f fire, next, rq execution, slack time.Duration) bool {
	if rq.queued.Before(f.next.Add(stageLead)) || !rq.queued.After(next.start.Add(slack)) {
		return true
	}
	for _, r := range rs {
		s, ok := sent[key(r)]
		if ok && !s.Before(next.start.Add(-slack)) && !s.After(rq.queued) && !r.At.Before(rq.queued.Add(-slack)) {
			return true
		}
	}
	return false
}

// takeEdge matches an execution no expected fire explains to an edge fire
// not matched yet: queued from its instant to the next, or, a MISFIRE
// execution (a fire staged into a pending entry, or replayed by a
// catch-up), from stageLead before it to its window's close, as an
// expected fire's replay is matched.
func takeEdge(edge []fire, taken []bool, e execution) bool {
	for i, f := range edge {
		from, until := f.at, f.next
		if e.misfire {
			from = f.at.Add(-stageLead)
			if until = f.cut; !until.IsZero() && until.Before(f.next) {
				until = f.next
			}
		}
		if !taken[i] && !e.queued.Before(from) && (until.IsZero() || e.queued.Before(until)) {
			taken[i] = true
			return true
		}
	}
	return false
}

// busy: an execution (a trigger's too) was pending or running at some moment from the fire's
// instant to queuedBy, when it may have committed at the latest (the expectation's bound: a fire
// committed late collapses into what is pending when it commits). A run's end counts as the
// scheduler saw it (seenRunningUntil).
//
// A trigger whose first launch never started (a term that lapsed as it launched: reconciliation
// finds the tasks unknown) runs only as FAILOVER, queued at the relaunch; it was pending from its
// sending (sent), so a fire collapses into it as into any pending execution.
func busy(rs []run, f expect, slack time.Duration, faults []Fault, sent map[string]time.Time) bool {
	until := f.queuedBy
	for _, r := range rs {
		q := r.Queued
		if !onTime(r) {
			q = relaunchedTriggerSent(rs, r, sent)
		}
		end := r.end
		if !end.IsZero() {
			end = maxTime(end, seenRunningUntil(r, faults))
		}
		if !q.IsZero() && q.Before(until) && (end.IsZero() || !end.Add(slack).Before(f.at)) {
			return true
		}
	}
	return false
}

// relaunchedTriggerSent is when a FAILOVER run's trigger was sent, if no
// run of that trigger started before as itself (zero otherwise).
func relaunchedTriggerSent(rs []run, r run, sent map[string]time.Time) time.Time {
	k := key(r)
	at, ok := sent[k]
	if k == "" || !ok {
		return time.Time{}
	}
	for _, x := range rs {
		if onTime(x) && key(x) == k {
			return time.Time{}
		}
	}
	return at
}

// collapsedIntoRelaunch: a misfire=false fire collapsed into an execution pending at its instant
// whose launch never started and ran as a FAILOVER relaunch (docs/jobs.md: a task that never
// started runs again at once): such a relaunch started after the fire, before the expectation's
// heldRelaunchBy, and no on-time execution of the job started in between. A relaunch that carries
// the instant its run served was pending at f's only if that instant is not later, and is of a
// launch that never started only if no run serving that instant started.
func collapsedIntoRelaunch(rs []run, f expect) bool {
	if f.heldRelaunchBy.IsZero() {
		return false
	}
	for _, r := range rs {
		if onTime(r) || key(r) != "" || r.At.Before(f.at) || !r.At.Before(f.heldRelaunchBy) || r.Nominal.After(f.at) || startedAs(rs, r) {
			continue
		}
		between := false
		for _, x := range rs {
			if onTime(x) && !x.At.Before(f.at) && x.At.Before(r.At) {
				between = true
				break
			}
		}
		if !between {
			return true
		}
	}
	return false
}

// collapsedIntoRequeued: a misfire=false fire collapsed into an execution pending at its instant
// whose launch was rolled back (its ACCEPT failed) and queued again: the execution's Queued is the
// requeue's instant, after the fire, but its task ids, kept across the rollback (queue.Relaunch),
// carry the instant it was first queued (jobs.FireTaskID), at or before the fire.
func collapsedIntoRequeued(rs []run, f fire) bool {
	for _, r := range rs {
		if !onTime(r) || key(r) != "" || !r.Queued.After(f.at) || r.At.Before(f.at) {
			continue
		}
		if first, ok := firstQueued(r.Task); ok && !first.After(f.at) {
			return true
		}
	}
	return false
}

// firstQueued is the instant a task's execution was first queued, as its
// id carries it (false: an id without one).
func firstQueued(taskID string) (time.Time, bool) {
	id, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return time.Time{}, false
	}
	return jobs.UUIDTime(id.UUID)
}

// relaunched: a FAILOVER run of the job, launched after the fire and
// not yet counted for another, stands for it (standsFor).
func relaunched(rs []run, f expect, fo map[string]bool) bool {
	for _, r := range rs {
		if standsFor(r, f) && !fo[r.Task] {
			fo[r.Task] = true
			return true
		}
	}
	return false
}

// standsFor: r is a FAILOVER relaunch (not a trigger's) that started
// after the fire and before the expectation's relaunchBy, so it may stand
// for it (relaunched); one that carries the instant its run served stands
// for that fire only.
func standsFor(r run, f expect) bool {
	return !onTime(r) && key(r) == "" && !r.At.Before(f.at) && r.At.Before(f.relaunchBy) &&
		(r.Nominal.IsZero() || r.Nominal.Equal(f.at))
}

// cleared: the fire's window was closed by a configuration change before
// any execution started after the fire (the change cleared it pending),
// or, misfire=true, at all (the change cleared the backlog of executions
// still pending: docs/jobs.md).
func cleared(rs []run, f fire, misfire bool) bool {
	if f.cut.IsZero() {
		return false
	}
	if misfire {
		return true
	}
	for _, r := range rs {
		if !r.At.Before(f.at) && r.At.Before(f.cut) {
			return false
		}
	}
	return true
}

// replays matches misfire=true fires to the MISFIRE executions (and the FAILOVER relaunches) that
// stand for them. The first match is greedy, in fire order: a fire takes the first free MISFIRE
// execution queued after it was staged. A fire left without one then looks for an augmenting path:
// a MISFIRE execution it may take from the fire holding it, which in turn takes another, ending at
// a free execution or at a FAILOVER relaunch (relaunched's rule) the later fire may stand on, free
// or itself taken from the fire holding it. Greedily, a fire whose own execution ran as FAILOVER
// (its task never started: the term ended during its launch) took the next fire's MISFIRE
// execution, and so on down the backlog, and the backlog's last fire was reported lost. A relaunch
// a path could not move was one short the same way. No execution or relaunch matched before is
// freed: a path only moves them between fires.
type replays struct {
	ex    []execution
	used  []bool
	rs    []run
	fo    map[string]bool
	owner map[int]expect // a MISFIRE execution's fire
	// foOwner is a FAILOVER relaunch's fire, when the matching took it
	// (one in fo without an owner was counted outside it).
	foOwner map[string]expect
}

// visit is what one augmenting search has tried: executions by index,
// relaunches by task id.
type visit struct {
	ex map[int]bool
	fo map[string]bool
}

func (m *replays) augment(f expect, seen visit) bool {
	i := sort.Search(len(m.ex), func(i int) bool { return !m.ex[i].queued.Before(f.stagedFrom) })
	for ; i < len(m.ex); i++ {
		e := m.ex[i]
		if !e.misfire || seen.ex[i] || (!f.cut.IsZero() && !e.queued.Before(f.cut)) {
			continue
		}
		g, held := m.owner[i]
		if m.used[i] && !held { // an on-time match of the first pass
			continue
		}
		seen.ex[i] = true
		if !m.used[i] || m.augment(g, seen) {
			m.used[i] = true
			m.owner[i] = f
			return true
		}
	}
	// a free relaunch first (the shortest path), then one held by another
	// fire of the matching that finds another path
	for _, free := range []bool{true, false} {
		for _, r := range m.rs {
			if !standsFor(r, f) || seen.fo[r.Task] || m.fo[r.Task] == free {
				continue
			}
			g, held := m.foOwner[r.Task]
			if !free && !held { // counted outside the matching
				continue
			}
			seen.fo[r.Task] = true
			if free || m.augment(g, seen) {
				m.fo[r.Task] = true
				m.foOwner[r.Task] = f
				return true
			}
		}
	}
	return false
}

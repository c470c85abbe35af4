package soak

import "time"

// checkHeal: after the last fault heals, every job starts again within Heal of its first due fire
// after the heal: its first expected cron fire after the heal that no documented rule collapses or
// voids:
//
//   - a misfire=false fire while a run of the job is going, as the
//     scheduler sees it (ended within Slack before the fire, or later),
//     collapses into it: the next fire counts;
//   - a misfire=true fire then waits behind it: due from that run's end;
//   - a fire whose window a change (update, disable, deregister) closes
//     before Heal after it may be voided or cleared by the change: the
//     next fire counts, in the window after if any;
//
// and none is due when no fire is left before the workload's end.
func (rep *Report) checkHeal(in Input, byJob map[string][]run, expected map[string]jobExpect) {
	var healed time.Time
	for _, f := range in.Faults {
		healed = maxTime(healed, f.End)
		if f.Kind == AgentLost { // its tasks count as running until they are counted lost
			healed = maxTime(healed, f.Start.Add(UnreachableBound))
		}
		if nodeGone(f.Kind) { // its tasks count as running until their pods are deleted or end
			healed = maxTime(healed, nodeGoneUntil(f, in.Faults))
		}
	}
	if healed.IsZero() {
		return
	}
	for _, j := range in.Jobs {
		if j.Daemon || len(j.Windows) == 0 {
			continue
		}
		rs := byJob[j.Name]
		f, due, ok := healDue(j, expected[j.Name].fires, rs, in, healed)
		if !ok {
			continue
		}
		started := false
		for _, r := range rs {
			if !r.At.Before(healed) && !r.At.After(due.Add(in.Heal)) {
				started = true
				break
			}
		}
		if !started {
			rep.add(NoFireAfter, j.Name, "no start between the heal at %s and %s (first due fire %s + %s)", healed.UTC().Format("15:04:05.000"),
				due.Add(in.Heal).UTC().Format("15:04:05.000"), f.UTC().Format("15:04:05"), in.Heal)
		}
	}
}

// healDue is job j's first fire after healed that neither collapses nor
// is voided (checkHeal), and from when its run is due (ok false: none
// before the end).
func healDue(j Job, fs []expect, rs []run, in Input, healed time.Time) (at, due time.Time, ok bool) {
	for _, f := range fs {
		if !f.at.After(healed) {
			continue
		}
		if !in.End.IsZero() && f.at.Add(in.Heal).After(in.End) {
			return time.Time{}, time.Time{}, false
		}
		if !f.cut.IsZero() && f.cut.Before(f.at.Add(in.Heal)) {
			continue // the change may void or clear it
		}
		if f.cut.IsZero() && windowOf(j, f.at).To.Before(f.at.Add(in.Heal)) {
			continue // the workload's last window ends first
		}
		going, until := goingAt(rs, f.at, in, healed)
		if !going {
			return f.at, f.at, true
		}
		if j.Misfire {
			return f.at, maxTime(f.at, until), true
		}
	}
	return time.Time{}, time.Time{}, false
}

// windowOf is the window of j holding instant t.
func windowOf(j Job, t time.Time) Window {
	for _, w := range j.Windows {
		if t.After(w.From) && !t.After(w.To) {
			return w
		}
	}
	return Window{From: t, To: t}
}

// goingAt: a run of the job started before t was running at t as the
// scheduler saw it, and until when. Its end reaches the scheduler up to
// Slack late, or later after some faults (seenRunningUntil). A run whose
// end was never recorded (killed with its agent) counts as running until
// the job's next start after it, at most Heal after the heal: the
// reconciliation after it reports it lost.
func goingAt(rs []run, t time.Time, in Input, healed time.Time) (bool, time.Time) {
	var until time.Time
	for i, r := range rs {
		if !r.At.Before(t) {
			continue
		}
		var end time.Time
		if r.end.IsZero() {
			end = healed.Add(in.Heal)
			for _, x := range rs[i+1:] {
				if x.At.After(r.At) {
					end = minTime(end, x.At)
					break
				}
			}
		} else {
			end = maxTime(r.end.Add(in.Slack), seenRunningUntil(r, in.Faults))
		}
		if !end.Before(t) {
			until = maxTime(until, end)
		}
	}
	return !until.IsZero(), until
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

package soak

import (
	"fmt"
	"time"
)

// matchNominal matches each execution that carries the cron instant it serves (execution.nominal,
// recorded by the scheduler with the ready entry and passed in the task's payload) to the expected
// fire of that instant, whenever it was queued: a fire committed late (a paused leader, a commit
// the store held) is queued at its commit, and inferring its fire from that time takes it for a
// later fire's. Executions serving the same instant are one fire's (checkDuplicates tells a shard
// run twice). Every execution with an instant is used; open are the fires left for the inference by
// queueing time (runs of older schedulers, triggers, failovers), stray the executions serving an
// instant no expected fire has (an edge fire's, else unexplained).
func (rep *Report) matchNominal(ex []execution, used []bool, fs []expect) (open []expect, stray []execution) {
	at := make(map[time.Time]int, len(fs))
	for k, f := range fs {
		at[f.at] = k
	}
	done := make([]bool, len(fs))
	for i, e := range ex {
		if e.nominal.IsZero() {
			continue
		}
		used[i] = true
		rep.Nominal++
		if k, ok := at[e.nominal]; ok {
			done[k] = true
			continue
		}
		stray = append(stray, e)
	}
	for k, f := range fs {
		if !done[k] {
			open = append(open, f)
		}
	}
	return open, stray
}

// stalledBehind: a misfire=false fire without an execution of its own
// came while the producer was behind: an execution serving an earlier
// instant was queued at or after this fire's instant. A producer that
// falls behind by more than a period fires such a job once for the
// instants it missed and then on schedule from when it caught up (the
// stall rule, docs/jobs.md; TestProducerStallReplaysOnlyMisfireJobs), so
// the instants from the late fire's to its queueing collapsed into it.
func stalledBehind(ex []execution, f fire) bool {
	for _, e := range ex {
		if !e.nominal.IsZero() && e.nominal.Before(f.at) && !e.queued.Before(f.at) {
			return true
		}
	}
	return false
}

// checkStray: an execution serving an instant no expected fire has is an
// edge fire's, or one after the end (the scheduler fires on), else
// unexplained.
func (rep *Report) checkStray(job string, stray []execution, edge []fire, taken []bool, end time.Time, slack time.Duration) {
	for _, e := range stray {
		if (end.IsZero() || e.nominal.Before(end.Add(-slack))) && !takeEdgeAt(edge, taken, e.nominal) {
			rep.add(ExtraRun, job, "execution queued %s serves %s, an instant none of the job's windows fires", e.queued.Format("15:04:05.000"), e.nominal.Format("15:04:05.000"))
		}
	}
}

// startedAs: FAILOVER run r re-runs a shard of an execution that started
// (an on-time run serving the instant r serves started), not a launch that
// never started.
func startedAs(rs []run, r run) bool {
	if r.Nominal.IsZero() {
		return false
	}
	for _, x := range rs {
		if onTime(x) && key(x) == "" && x.Nominal.Equal(r.Nominal) {
			return true
		}
	}
	return false
}

// takeEdgeAt matches an execution serving instant t to the edge fire of
// that instant, if not taken yet.
func takeEdgeAt(edge []fire, taken []bool, t time.Time) bool {
	for i, f := range edge {
		if !taken[i] && f.at.Equal(t) {
			taken[i] = true
			return true
		}
	}
	return false
}

// nominalKey names a shard of the fire of instant t.
func nominalKey(t time.Time, item int) string {
	return fmt.Sprintf("%s/%d", t.UTC().Format(time.RFC3339Nano), item)
}

// earlyTolerance is how much earlier than its instant an execution's
// start may be recorded without being early: the scheduler and the
// recorders read one machine's clock, the recorders' to the millisecond.
const earlyTolerance = 20 * time.Millisecond

// checkEarly: no execution starts before the cron instant it serves
// (docs/jobs.md: a fire staged ahead starts at its instant, never
// earlier, also when it was staged into an entry with executions pending).
func (rep *Report) checkEarly(job string, ex []execution) {
	for _, e := range ex {
		if !e.nominal.IsZero() && e.start.Before(e.nominal.Add(-earlyTolerance)) {
			rep.add(EarlyRun, job, "execution queued %s serving %s started %s, %v before its instant",
				e.queued.UTC().Format("15:04:05.000"), e.nominal.UTC().Format("15:04:05.000"), e.start.UTC().Format("15:04:05.000"),
				e.nominal.Sub(e.start).Round(time.Millisecond))
		}
	}
}

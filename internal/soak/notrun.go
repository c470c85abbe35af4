package soak

import (
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// notRun is an execution's task that history says was lost with its
// agent before it started and was not run again (docs/jobs.md, failover:
// a task still STAGING when its agent went UNREACHABLE may have started
// there, so a job without failover does not run the shard again). The run
// log has no run of it: nothing may have run. Its fire or trigger is
// accounted for by that recorded reason, and, as for a run, the registry
// held it running from its launch until it was counted lost, so a
// misfire=false fire in between collapsed into it.
type notRun struct {
	task    string
	item    int
	queued  time.Time // when its execution was queued (its task id's time, to the millisecond)
	lost    time.Time // when history counted it lost
	trigger bool      // a trigger's execution (history's triggeredBy api:…), else a cron fire's
	taken   bool      // already accounts for a fire or a trigger
}

// notRunOf lists, per job, the executions' tasks history (any copy of it)
// holds as lost before they started and not run again.
func notRunOf(in Input) map[string][]*notRun {
	out := map[string][]*notRun{}
	seen := map[string]bool{}
	add := func(h map[string][]Outcome) {
		for id, os := range h {
			for _, o := range os {
				if o.NotRun.IsZero() || seen[id] {
					continue
				}
				tid, err := jobs.ParseTaskID(id)
				if err != nil || tid.Kind != jobs.KindReady {
					continue // a failover's relaunch stands for no fire of its own
				}
				q, ok := jobs.UUIDTime(tid.UUID)
				if !ok {
					continue
				}
				seen[id] = true
				out[tid.JobName] = append(out[tid.JobName], &notRun{task: id, item: tid.Item, queued: q, lost: o.NotRun,
					trigger: triggered(o.Trigger)})
			}
		}
	}
	add(in.History)
	for _, h := range in.Replicas {
		add(h)
	}
	return out
}

// triggered: history's triggeredBy names a trigger (the API's, the
// console's, ejctl's), not a cron fire or a catch-up.
func triggered(by string) bool {
	for _, p := range []string{"api:", "console:", "ejctl:"} {
		if strings.HasPrefix(by, p) {
			return true
		}
	}
	return false
}

// takeNotRun accounts for fire f by a cron fire's task not run, not taken
// yet, whose execution was queued from when the fire may have been staged
// to the next instant, or to until (a fire committed late under a fault:
// the expectation's queuedBy).
func takeNotRun(nr []*notRun, f expect, until time.Time) bool {
	for _, n := range nr {
		if !n.trigger && !n.taken && !n.queued.Before(f.stagedFrom) && n.queued.Before(maxTime(f.next, until)) {
			n.taken = true
			return true
		}
	}
	return false
}

// takeNotRunTrigger accounts for an accepted trigger that never ran by a
// trigger's task not run, not taken yet, queued from the trigger's
// sending (less the slack: its queueing time is the leader's clock) to a
// minute after.
func takeNotRunTrigger(nr []*notRun, sent time.Time) bool {
	if sent.IsZero() {
		return false
	}
	for _, n := range nr {
		if n.trigger && !n.taken && !n.queued.Before(sent.Add(-time.Second)) && n.queued.Before(sent.Add(time.Minute)) {
			n.taken = true
			return true
		}
	}
	return false
}

// heldNotRun: a task not run was held running (from its queueing to its
// loss) at some moment from the fire's instant to until: a misfire=false
// fire collapsed into it.
func heldNotRun(nr []*notRun, f fire, slack time.Duration, until time.Time) bool {
	for _, n := range nr {
		if n.queued.Before(until) && !n.lost.Add(slack).Before(f.at) {
			return true
		}
	}
	return false
}

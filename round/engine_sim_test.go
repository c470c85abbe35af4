package round

import (
	"time"

	"github.com/ejcloud/elasticjob/offers"
)

// simEngine is the cluster engine between teamSim's rounds and its agents,
// as the embedded engine (and Mesos) does it, with the launcher's policy
// for it (scheduler/launcher.go). Without it teamSim offers every agent's
// whole free pool every round, which the real run does not:
//
//   - a DECLINE filters the declined pool for refuse: no pool of that
//     agent it contains is offered until the filter lapses (a smaller
//     pool is contained too);
//   - the launcher declines for RefuseBusy (1 s) while work waits, else
//     for RefuseIdle (5 s), each shortened to the next fire or staged
//     entry (refuseBefore); when nothing waits, after OfferHold, it
//     declines what it holds and SUPPRESSes, and REVIVEs (clearing every
//     filter) when work comes back;
//   - with reviveWithheld (issue 52's fix) it also REVIVEs when work fits
//     what is free by the running tasks' count while no offer comes and a
//     filter of its own may stand.
//
// The producer's side (fires staged lead ahead of their instant, and the
// window between taking a fire and its commit, when the fire is in neither
// the queue nor the producer's next fires unless stagedCounts) is
// cronLate's, with lead and commitLag set.
type simEngine struct {
	refuseIdle, refuseBusy, hold time.Duration
	reviveWithheld               bool

	filters    []simFilter
	suppressed bool
	lastWork   time.Time
	revives    int
	// nextFire is the producer's NextFireAt for the decline filter (nil: none).
	nextFire func(now time.Time) (time.Time, bool)
}

type simFilter struct {
	agent string
	res   offers.Resources
	until time.Time
}

func newSimEngine(reviveWithheld bool) *simEngine {
	return &simEngine{refuseIdle: 5 * time.Second, refuseBusy: time.Second, hold: time.Second, reviveWithheld: reviveWithheld}
}

// offer is what the engine offers of the free pools now: nothing while
// suppressed, and no pool a standing filter contains.
func (e *simEngine) offer(now time.Time, free []offers.Offer) []offers.Offer {
	if e.suppressed {
		return nil
	}
	kept := e.filters[:0]
	for _, f := range e.filters {
		if f.until.After(now) {
			kept = append(kept, f)
		}
	}
	e.filters = kept
	var out []offers.Offer
	for _, o := range free {
		if !e.filtered(o) {
			out = append(out, o)
		}
	}
	return out
}

func (e *simEngine) filtered(o offers.Offer) bool {
	for _, f := range e.filters {
		if f.agent == o.AgentID && o.Free.Fits(f.res) {
			return true
		}
	}
	return false
}

// apply carries out a plan's offer calls as the launcher does.
func (e *simEngine) apply(now time.Time, offered []offers.Offer, p Plan) {
	if p.Idle {
		if len(offered) > 0 && now.Before(e.lastWork.Add(e.hold)) {
			return // held for OfferHold
		}
		for _, o := range offered {
			e.decline(now, o, e.refuseBefore(now, p.WakeAt, e.refuseIdle))
		}
		e.suppressed = true
		return
	}
	e.lastWork = now
	switch {
	case e.suppressed:
		e.revive()
	case e.reviveWithheld && p.Withheld && len(offered) == 0 && len(e.filters) > 0:
		e.revive()
	}
	refuse := e.refuseIdle
	if p.Busy {
		refuse = e.refuseBusy
	}
	refuse = e.refuseBefore(now, p.WakeAt, refuse)
	for _, id := range p.Decline {
		for _, o := range offered {
			if o.ID == id {
				e.decline(now, o, refuse)
			}
		}
	}
}

func (e *simEngine) decline(now time.Time, o offers.Offer, refuse time.Duration) {
	e.filters = append(e.filters, simFilter{agent: o.AgentID, res: o.Free, until: now.Add(refuse)})
}

func (e *simEngine) revive() {
	e.suppressed, e.filters = false, nil
	e.revives++
}

// refuseBefore is the launcher's (scheduler/launcher.go).
func (e *simEngine) refuseBefore(now, wakeAt time.Time, refuse time.Duration) time.Duration {
	next := wakeAt
	if e.nextFire != nil {
		if at, ok := e.nextFire(now); ok && at.After(now) && (next.IsZero() || !next.After(now) || at.Before(next)) {
			next = at
		}
	}
	if !next.After(now) || next.Sub(now) >= refuse {
		return refuse
	}
	return max(next.Sub(now), time.Millisecond)
}

package offers

import (
	"fmt"
	"slices"
	"testing"
)

type reqKey struct {
	job   string
	shard int
	kind  Kind
}

func keyOf(r Request) reqKey { return reqKey{r.Job, r.Shard, r.Kind} }

// checkInvariants verifies what every plan must satisfy, whatever the input.
func checkInvariants(t *testing.T, in Input, p Plan) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if len(in.Offers)+len(in.Requests) <= 50 {
			msg += fmt.Sprintf("\ninput: %+v", in)
		}
		t.Error(msg)
	}
	// The first offer of each id counts (offers are stable-sorted by id).
	offers := map[string]Offer{}
	for _, o := range in.Offers {
		if _, dup := offers[o.ID]; !dup {
			offers[o.ID] = o
		}
	}
	if len(offers) == 0 && len(p.Launches) > 0 {
		fail("launches without offers")
	}
	// Decline is exactly the untouched offers, sorted.
	var untouched []string
	for id := range offers {
		if len(p.Launches[id]) == 0 {
			untouched = append(untouched, id)
		}
	}
	slices.Sort(untouched)
	if !slices.Equal(untouched, p.Decline) {
		fail("decline %v, want %v", p.Decline, untouched)
	}
	// Nothing over-allocated, per offer and per agent; executors charged
	// exactly once per (app, agent) not running; no shard placed twice.
	placed := map[reqKey]int{}
	usedAgent := map[string]Resources{}
	freeAgent := map[string]Resources{}
	charges := map[ExecutorKey]int{}
	for _, o := range offers {
		freeAgent[o.AgentID] = freeAgent[o.AgentID].Add(o.Free)
	}
	for id, ls := range p.Launches {
		o, ok := offers[id]
		if !ok || len(ls) == 0 {
			fail("launches on unknown or empty offer %q", id)
			continue
		}
		var used Resources
		for _, l := range ls {
			if l.OfferID != id || l.AgentID != o.AgentID {
				fail("launch %+v on offer %s/%s", l, id, o.AgentID)
			}
			used = used.Add(l.Request.Task)
			k := ExecutorKey{l.Request.App, o.AgentID}
			if l.ChargesExecutor {
				used = used.Add(l.Request.Executor)
				charges[k]++
			}
			placed[keyOf(l.Request)]++
		}
		if !used.Fits(o.Free) {
			fail("offer %s over-allocated: used %s of %s", id, used, o.Free)
		}
		usedAgent[o.AgentID] = usedAgent[o.AgentID].Add(used)
	}
	for a, used := range usedAgent {
		if !used.Fits(freeAgent[a]) {
			fail("agent %s over-allocated: used %s of %s", a, used, freeAgent[a])
		}
	}
	for k, n := range charges {
		want := 1
		if in.Running[k] {
			want = 0
		}
		if n != want {
			fail("executor %v charged %d times, want %d", k, n, want)
		}
	}
	for k, n := range placed {
		if n > 1 {
			fail("%v placed %d times", k, n)
		}
	}
	// Every request is accounted for exactly once: placed or unplaced.
	inputs := map[reqKey]int{}
	for _, r := range in.Requests {
		inputs[keyOf(r)]++
	}
	unplaced := map[reqKey]int{}
	for _, u := range p.Unplaced {
		unplaced[reqKey{u.Job, u.Shard, u.Kind}]++
		switch {
		case len(offers) == 0 && u.Reason != ReasonNoOffers && u.Reason != ReasonDuplicate && u.Reason != ReasonInvalid:
			fail("unplaced %+v with no offers", u)
		case u.Kind == Failover && u.Reason == ReasonGangIncomplete:
			fail("failover reported as gang: %+v", u)
		case u.Kind == Ready && len(offers) > 0 && u.Reason != ReasonGangIncomplete && u.Reason != ReasonDuplicate && u.Reason != ReasonInvalid:
			fail("ready unplaced with %q", u.Reason)
		}
	}
	for k, n := range inputs {
		if placed[k]+unplaced[k] != n {
			fail("%v: %d requests, %d placed, %d unplaced", k, n, placed[k], unplaced[k])
		}
	}
	// A ready gang is all or nothing.
	shardsOf := map[string]map[int]bool{}
	for _, r := range in.Requests {
		if r.Kind == Ready && invalid(&r) == "" {
			if shardsOf[r.Job] == nil {
				shardsOf[r.Job] = map[int]bool{}
			}
			shardsOf[r.Job][r.Shard] = true
		}
	}
	for job, s := range shardsOf {
		n := 0
		for shard := range s {
			n += placed[reqKey{job, shard, Ready}]
		}
		if n != 0 && n != len(s) {
			fail("gang %s: %d of %d shards placed", job, n, len(s))
		}
	}
}

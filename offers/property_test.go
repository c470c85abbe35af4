package offers

import (
	"cmp"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

const propertyRounds = 3000

// randomInput builds a small random instance: a few agents with one or two
// offers each, jobs of both kinds over a few apps, tied and untied Seqs,
// occasional duplicates, and executors running on random agents (some of
// them without offers).
func randomInput(rng *rand.Rand) Input {
	var in Input
	agents := rng.Intn(6)
	for a := range agents {
		for range 1 + rng.Intn(2) {
			in.Offers = append(in.Offers, Offer{
				ID:      fmt.Sprintf("o%02d", rng.Intn(100)),
				AgentID: fmt.Sprintf("a%d", a),
				Free:    Resources{CPU: Milli(rng.Intn(4001)), MemMB: int64(rng.Intn(4097))},
			})
		}
	}
	apps := []string{"p", "q", "r"}
	execs := map[string]Resources{}
	for _, app := range apps {
		execs[app] = Resources{CPU: Milli(rng.Intn(600)), MemMB: int64(rng.Intn(300))}
	}
	for j := range rng.Intn(12) {
		app := apps[rng.Intn(len(apps))]
		kind := Kind(rng.Intn(2))
		task := Resources{CPU: Milli(1 + rng.Intn(1500)), MemMB: int64(1 + rng.Intn(1024))}
		for s := range 1 + rng.Intn(5) {
			in.Requests = append(in.Requests, Request{
				Job: fmt.Sprintf("j%d", j), Shard: s, Kind: kind, App: app,
				Task: task, Executor: execs[app], Seq: int64(rng.Intn(6)),
			})
		}
	}
	if len(in.Requests) > 0 && rng.Intn(4) == 0 {
		in.Requests = append(in.Requests, in.Requests[rng.Intn(len(in.Requests))])
	}
	in.Running = map[ExecutorKey]bool{}
	for range rng.Intn(6) {
		in.Running[ExecutorKey{apps[rng.Intn(len(apps))], fmt.Sprintf("a%d", rng.Intn(7))}] = rng.Intn(5) > 0
	}
	rng.Shuffle(len(in.Offers), func(i, j int) { in.Offers[i], in.Offers[j] = in.Offers[j], in.Offers[i] })
	return in
}

func cloneInput(in Input) Input {
	out := Input{Offers: slices.Clone(in.Offers), Requests: slices.Clone(in.Requests)}
	if in.Running != nil {
		out.Running = make(map[ExecutorKey]bool, len(in.Running))
		for k, v := range in.Running {
			out.Running[k] = v
		}
	}
	return out
}

// order returns the (kind, job) groups in the order the spec serves them:
// failover first, then oldest (smallest Seq in the group), then job name.
func order(rs []Request) []reqKey {
	seq := map[reqKey]int64{}
	for _, r := range rs {
		k := reqKey{job: r.Job, kind: r.Kind}
		if s, ok := seq[k]; !ok || r.Seq < s {
			seq[k] = r.Seq
		}
	}
	keys := make([]reqKey, 0, len(seq))
	for k := range seq {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b reqKey) int {
		return cmp.Or(-cmp.Compare(a.kind, b.kind), cmp.Compare(seq[a], seq[b]), cmp.Compare(a.job, b.job))
	})
	return keys
}

// launchesOf keeps the launches of the given groups, by offer.
func launchesOf(p Plan, groups map[reqKey]bool) map[string][]Launch {
	out := map[string][]Launch{}
	for id, ls := range p.Launches {
		for _, l := range ls {
			if groups[reqKey{job: l.Request.Job, kind: l.Request.Kind}] {
				out[id] = append(out[id], l)
			}
		}
	}
	return out
}

func without(rs []Request, drop func(Request) bool) []Request {
	return slices.DeleteFunc(slices.Clone(rs), drop)
}

func TestPropertyInvariants(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for range propertyRounds {
		in := randomInput(rng)
		before := cloneInput(in)
		p := Match(in)
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("Match modified its input")
		}
		checkInvariants(t, in, p)
		if again := Match(in); !reflect.DeepEqual(p, again) {
			t.Fatalf("not deterministic:\n%v\n%v", summary(p), summary(again))
		}
		if t.Failed() {
			return
		}
	}
}

// Serving order: the groups served first are placed exactly as if the later
// groups did not exist. With the prefix cut after the failover groups this is
// "failover before ready"; with any cut it is "oldest first".
func TestPropertyServingOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range propertyRounds {
		in := randomInput(rng)
		keys := order(in.Requests)
		cut := rng.Intn(len(keys) + 1)
		if rng.Intn(3) == 0 { // cut exactly after the failover groups
			cut = 0
			for cut < len(keys) && keys[cut].kind == Failover {
				cut++
			}
		}
		first := map[reqKey]bool{}
		for _, k := range keys[:cut] {
			first[k] = true
		}
		prefix := cloneInput(in)
		prefix.Requests = without(in.Requests, func(r Request) bool { return !first[reqKey{job: r.Job, kind: r.Kind}] })
		full, part := Match(in), Match(prefix)
		if got, want := launchesOf(full, first), launchesOf(part, first); !reflect.DeepEqual(got, want) {
			t.Fatalf("first %d groups placed differently with later groups present:\nfull %v\npart %v\ninput %+v", cut, summary(full), summary(part), in)
		}
	}
}

// Rollback: a gang that did not fit, or a failover shard that did not fit,
// leaves no trace, so removing it from the input changes nothing else.
func TestPropertyUnplacedLeavesNoTrace(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	checked := 0
	for range propertyRounds {
		in := randomInput(rng)
		p := Match(in)
		// Dropping a failover shard must not change its job's place in
		// the serving order, so pick one whose Seq is not its job's
		// unique minimum.
		keepsOrder := func(u Unplaced) bool {
			if u.Kind == Ready {
				return true
			}
			var own int64
			others := int64(1 << 62)
			for _, r := range in.Requests {
				if r.Job == u.Job && r.Kind == u.Kind {
					if r.Shard == u.Shard {
						own = r.Seq
					} else {
						others = min(others, r.Seq)
					}
				}
			}
			return others <= own
		}
		var u *Unplaced
		for i := range p.Unplaced {
			if r := p.Unplaced[i].Reason; r != ReasonDuplicate && r != ReasonInvalid && r != ReasonNoOffers && keepsOrder(p.Unplaced[i]) {
				u = &p.Unplaced[i]
				break
			}
		}
		if u == nil {
			continue
		}
		checked++
		drop := func(r Request) bool {
			if u.Kind == Ready {
				return r.Job == u.Job && r.Kind == Ready
			}
			return keyOf(r) == reqKey{u.Job, u.Shard, u.Kind}
		}
		less := cloneInput(in)
		less.Requests = without(in.Requests, drop)
		q := Match(less)
		if !reflect.DeepEqual(p.Launches, q.Launches) || !reflect.DeepEqual(p.Decline, q.Decline) {
			t.Fatalf("removing unplaced %+v changed the plan:\nwith    %v\nwithout %v\ninput %+v", *u, summary(p), summary(q), in)
		}
	}
	if checked < propertyRounds/10 {
		t.Fatalf("only %d rounds had an unplaced request; generator too generous", checked)
	}
}

// The plan does not depend on the order of offers, nor on the order of
// requests when there are no duplicates.
func TestPropertyOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for range propertyRounds {
		in := randomInput(rng)
		seen := map[reqKey]bool{}
		in.Requests = without(in.Requests, func(r Request) bool {
			dup := seen[keyOf(r)]
			seen[keyOf(r)] = true
			return dup
		})
		// Offer ids must be unique for the order not to matter.
		ids := map[string]bool{}
		in.Offers = slices.DeleteFunc(in.Offers, func(o Offer) bool {
			dup := ids[o.ID]
			ids[o.ID] = true
			return dup
		})
		shuffled := cloneInput(in)
		rng.Shuffle(len(shuffled.Offers), func(i, j int) {
			shuffled.Offers[i], shuffled.Offers[j] = shuffled.Offers[j], shuffled.Offers[i]
		})
		rng.Shuffle(len(shuffled.Requests), func(i, j int) {
			shuffled.Requests[i], shuffled.Requests[j] = shuffled.Requests[j], shuffled.Requests[i]
		})
		if p, q := Match(in), Match(shuffled); !reflect.DeepEqual(p, q) {
			t.Fatalf("order changed the plan:\n%v\n%v", summary(p), summary(q))
		}
	}
}

// The executor preference: a launch that charges an executor only happens
// when no offer on an agent already holding that executor could take the
// task at that moment. Checked on one-shard failover jobs, replayed in order.
func TestPropertyExecutorPreference(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for range propertyRounds {
		in := randomInput(rng)
		for i := range in.Requests {
			in.Requests[i].Kind = Failover
		}
		p := Match(in)
		// Replay: walk launches in serving order and track free resources.
		free := map[string]Resources{}
		agentOf := map[string]string{}
		for _, o := range in.Offers {
			if _, dup := free[o.ID]; !dup {
				free[o.ID], agentOf[o.ID] = o.Free, o.AgentID
			}
		}
		present := map[ExecutorKey]bool{}
		for k, v := range in.Running {
			present[k] = v
		}
		byKey := map[reqKey]Launch{}
		for _, ls := range p.Launches {
			for _, l := range ls {
				byKey[keyOf(l.Request)] = l
			}
		}
		// Serving order: groups in order, shards ascending inside a group.
		var serving []Request
		for _, g := range order(in.Requests) {
			var grp []Request
			for _, r := range in.Requests {
				if r.Job == g.job && r.Kind == g.kind {
					grp = append(grp, r)
				}
			}
			slices.SortStableFunc(grp, func(a, b Request) int { return cmp.Compare(a.Shard, b.Shard) })
			serving = append(serving, grp...)
		}
		for _, r := range serving {
			l, ok := byKey[keyOf(r)]
			if !ok || l.Request != r {
				continue
			}
			delete(byKey, keyOf(r))
			if l.ChargesExecutor {
				for id, f := range free {
					if present[ExecutorKey{r.App, agentOf[id]}] && r.Task.Fits(f) {
						t.Fatalf("%v charged an executor on %s although %s (agent with executor) had %s\ninput %+v", keyOf(r), l.OfferID, id, f, in)
					}
				}
				present[ExecutorKey{r.App, l.AgentID}] = true
				free[l.OfferID] = free[l.OfferID].Sub(r.Executor)
			}
			free[l.OfferID] = free[l.OfferID].Sub(r.Task)
		}
	}
}

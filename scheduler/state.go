package scheduler

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/internal/recent"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// state is the leader's one explicit state: what the loop knows of the
// engine and of the tasks it launched. Only the loop goroutine touches it;
// the launcher, the status handler, the reconciler and the wait recorder
// each read and change their part of it.
type state struct {
	subscribed bool // the engine's subscription is live
	// everSubscribed: the term has subscribed (its rounds no longer wait
	// for it: Scheduler.awaitingSubscription).
	everSubscribed bool
	subscribedAt   time.Time // the last subscription (its first round waits for offers from then: Scheduler.roundHeld)
	catchingUp     bool      // the producer's catch-up of missed fires has not committed yet (Scheduler.roundHeld)
	// catchUpJobs are the jobs that catch-up queues fires for, once it has
	// counted them (nil before): until it commits (catchingUp), at most
	// until catchUpUntil, only their entries wait (round.View.CatchingUp).
	catchUpJobs  map[string]bool
	catchUpUntil time.Time
	suppressed   bool // offers are suppressed (nothing waits)
	// filtersUntil is when the longest decline filter this scheduler asked
	// for lapses (zero: none since the last REVIVE, which clears them).
	filtersUntil time.Time

	offers    map[string]engine.Offer     // the offers held, by id
	executors map[offers.ExecutorKey]bool // the apps' executors running (or launched) per agent; only kept where the engine shares executors (engine.ExecutorSharing)
	agents    []engine.Agent              // the engine's inventory, as last read
	offered   map[string]offers.Resources // the most each agent ever offered

	// running mirrors /state/running: only the loop writes running
	// entries, so after each commit it updates the mirror instead of
	// reading and decoding every running task again every round. nil: to
	// be loaded (after a conflict or a resync).
	running map[string]map[int]task.Entry
	// retiring mirrors /state/retiring (registry.Retiring: a DAEMON shard's old task
	// while its move to another cluster overlaps; overlap.go), kept as running is;
	// nil: to be loaded. retireKilled are the retiring tasks this term has asked the
	// engine to kill, and when (killRetiring asks again only after retireAgain).
	retiring     map[string]map[int]registry.Retiring
	retireKilled map[string]time.Time
	// givenUp are the new tasks of overlaps given up (overlap.go): their end is told to
	// the observers though the registry no longer holds them.
	givenUp map[string]bool

	// accepting are the launches whose ACCEPT went off the loop and is not answered yet
	// (launcher.acceptLater), by task id; nil: none so far.
	accepting map[string]*inFlight

	reservation round.Reservation // the launch round's, carried to the next
	lastWork    time.Time         // the last round that had work waiting

	// reconciliation (reconcile.go)
	awaiting      map[string]bool // running tasks whose answer is missing
	asked         int             // the reconciliations begun (an explicit one failing off the loop ends only its own wait: reconciler.ask)
	awaitFrom     time.Time       // when they were asked for
	awaitUntil    time.Time       // launching waits for them until then
	awaitRetry    time.Time       // when the missing answers are asked for again (reconciler.again)
	awaitGap      time.Duration   // the wait before that ask, doubling
	roundNow      bool            // the last answer came: the next round runs at once, past the spacing (roundGap)
	firstLaunch   bool            // subscribed, and no round has looked at offers since (batch.go: short turns; Scheduler.turn)
	reconciledAt  time.Time       // the last periodic explicit reconciliation
	frameworkID   string          // the framework id the registry holds, as far as this term knows ("": to be written)
	launched      atomic.Bool     // the term has launched (its first launch is logged; Scheduler.Launched)
	offersHandled bool            // the term has handled offers (its first are logged)
	unreachable   map[string]time.Time
	lostCluster   map[string]string // an unreachable task's cluster, when the cluster as a whole was lost
	overtaken     recent.Set        // tasks a reconciliation answer ended as over, whose agent updates may still arrive (status.go; the oldest forgotten)
}

func newState() *state {
	return &state{offers: map[string]engine.Offer{}, executors: map[offers.ExecutorKey]bool{},
		offered: map[string]offers.Resources{}, unreachable: map[string]time.Time{},
		lostCluster: map[string]string{}, retireKilled: map[string]time.Time{},
		givenUp: map[string]bool{}}
}

// runningAll returns every running task, loading the mirror if needed.
// Entries of a launch that was recorded over several commits and never
// completed (no gang mark names it) are removed, never launched. Callers
// must not modify the maps.
func (st *state) runningAll(ctx context.Context, reg *registry.Registry) (map[string]map[int]task.Entry, error) {
	if st.running != nil {
		return st.running, nil
	}
	all, err := reg.Work().RunningTasks(ctx)
	if err != nil {
		return nil, err
	}
	if err := sweepGangs(ctx, reg, all); err != nil {
		return nil, err
	}
	st.running = all
	return all, nil
}

// runningOf returns one job's running tasks by item.
func (st *state) runningOf(ctx context.Context, reg *registry.Registry, job string) (map[int]task.Entry, error) {
	all, err := st.runningAll(ctx, reg)
	if err != nil {
		return nil, err
	}
	return all[job], nil
}

// putRunning records a committed running entry in the mirror.
func (st *state) putRunning(job string, item int, e task.Entry) {
	if st.running == nil {
		return // not loaded: the next read loads it from the store
	}
	m := st.running[job]
	if m == nil {
		m = map[int]task.Entry{}
		st.running[job] = m
	}
	m[item] = e
}

// dropRunning records a committed removal in the mirror.
func (st *state) dropRunning(job string, item int) {
	if m := st.running[job]; m != nil {
		delete(m, item)
		if len(m) == 0 {
			delete(st.running, job)
		}
	}
}

// reloadRunning forgets the mirrors; the next read reloads them.
func (st *state) reloadRunning() { st.running, st.retiring = nil, nil }

// retiringAll returns every retiring task (job → item), loading the mirror if needed.
// Callers must not modify the maps.
func (st *state) retiringAll(ctx context.Context, reg *registry.Registry) (map[string]map[int]registry.Retiring, error) {
	if st.retiring != nil {
		return st.retiring, nil
	}
	all, err := reg.Work().RetiringTasks(ctx)
	if err != nil {
		return nil, err
	}
	st.retiring = all
	return all, nil
}

// putRetiring records a committed retiring record in the mirror.
func (st *state) putRetiring(job string, item int, r registry.Retiring) {
	if st.retiring == nil {
		return
	}
	m := st.retiring[job]
	if m == nil {
		m = map[int]registry.Retiring{}
		st.retiring[job] = m
	}
	m[item] = r
}

// dropRetiring records a committed removal of a retiring record in the mirror.
func (st *state) dropRetiring(job string, item int) {
	if m := st.retiring[job]; m != nil {
		delete(m, item)
		if len(m) == 0 {
			delete(st.retiring, job)
		}
	}
}

// heldOffers are the offers held, as a round takes them (by id).
func (st *state) heldOffers() []offers.Offer {
	out := make([]offers.Offer, 0, len(st.offers))
	for _, o := range st.offers {
		out = append(out, offers.Offer{ID: o.ID, AgentID: o.AgentID, Hostname: o.Hostname, Cluster: engine.ClusterOf(o.AgentID),
			Free: offers.Resources{CPU: offers.CPUs(o.CPUs), MemMB: offers.MemMB(o.MemMB)}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (st *state) heldIDs() []string {
	ids := make([]string, 0, len(st.offers))
	for id := range st.offers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// noteOffers remembers the most each agent ever offered: an agent's total
// when the engine's inventory does not list it.
func (st *state) noteOffers(os []engine.Offer) {
	for _, o := range os {
		c := st.offered[o.AgentID]
		c.CPU, c.MemMB = max(c.CPU, offers.CPUs(o.CPUs)), max(c.MemMB, offers.MemMB(o.MemMB))
		st.offered[o.AgentID] = c
	}
}

// cluster is every agent known with its total: the inventory's, or the
// most it ever offered when that is more.
func (st *state) cluster() []round.Agent {
	out := make([]round.Agent, 0, len(st.agents)+len(st.offered))
	for _, a := range st.agents {
		out = append(out, round.Agent{ID: a.ID, Total: offers.Resources{CPU: offers.CPUs(a.CPUs), MemMB: offers.MemMB(a.MemMB)},
			Cluster: engine.ClusterOf(a.ID)})
	}
	for id, r := range st.offered {
		out = append(out, round.Agent{ID: id, Total: r, Cluster: engine.ClusterOf(id)})
	}
	return out
}

// alarm wakes the loop at the earliest instant asked of it.
type alarm struct {
	timer clock.Timer
	at    time.Time
	clk   clock.Clock
}

func newAlarm(clk clock.Clock) *alarm {
	a := &alarm{timer: clk.NewTimer(time.Hour), clk: clk}
	a.timer.Stop()
	return a
}

// at arms the alarm for t unless it is armed earlier already.
func (a *alarm) set(t time.Time) {
	if t.IsZero() || (!a.at.IsZero() && !t.Before(a.at)) {
		return
	}
	a.at = t
	a.timer.Reset(max(t.Sub(a.clk.Now()), 0))
}

// rang is called when the timer fired.
func (a *alarm) rang() { a.at = time.Time{} }

// sweepGangs removes, from all and from the registry, the entries of
// launches recorded over several commits whose last commit never came (no
// gang mark names them): their tasks were never sent to the engine.
func sweepGangs(ctx context.Context, reg *registry.Registry, all map[string]map[int]task.Entry) error {
	var marks map[string]string
	ch := reg.Change()
	for job, items := range all {
		for item, e := range items {
			if e.Gang == "" {
				continue
			}
			if marks == nil {
				var err error
				if marks, err = reg.Work().GangMarks(ctx); err != nil {
					return err
				}
			}
			if marks[job] != e.Gang {
				ch.Unlaunch(job, item)
				delete(items, item)
			}
		}
		if len(items) == 0 {
			delete(all, job)
		}
	}
	return ch.Commit(ctx)
}

package scheduler

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/observe"
)

// maxBatch bounds the status updates committed together (a ZooKeeper
// multi must stay well under its size limit).
const maxBatch = 256

// pendingUpdate is a status update waiting for the loop's next batch.
type pendingUpdate struct {
	ctx  context.Context // the Mesos client's: once it stopped, the update is dropped (Mesos resends it)
	st   engine.Status
	done func(handled bool)
}

// inboxItem is an event of the Mesos stream waiting for the loop: a
// status update, or (f) any other event's handling.
type inboxItem struct {
	u     pendingUpdate
	f     func(ctx context.Context)
	offer bool // f holds offers or rescinds them (may pass status updates in a term's first turns: takeInbox)
	// subscribe: f is a subscription's (a turn ends its take with it:
	// takeInbox)
	subscribe bool
}

// UpdateAsync queues a status update; the loop handles the updates that
// arrived together in one batch and commits them at once. It never waits
// for the loop: the Mesos event stream goes on being read while a launch
// round runs, so the master's queue to the scheduler (offers behind
// updates) does not grow. What queues here is bounded by the tasks alive:
// Mesos sends a task's next update only once the last is acknowledged.
func (s *Scheduler) UpdateAsync(ctx context.Context, st engine.Status, done func(bool)) {
	s.enqueue(inboxItem{u: pendingUpdate{ctx, st, done}})
}

// fromStream queues the handling of one of the stream's other events
// behind the updates that came before it (dropped once the client
// stopped).
func (s *Scheduler) fromStream(ctx context.Context, f func(ctx context.Context)) {
	if ctx.Err() == nil {
		s.enqueue(inboxItem{f: f})
	}
}

// subscriptionFromStream is fromStream for the subscription event.
func (s *Scheduler) subscriptionFromStream(ctx context.Context, f func(ctx context.Context)) {
	if ctx.Err() == nil {
		s.enqueue(inboxItem{f: f, subscribe: true})
	}
}

// offersFromStream is fromStream for an offer event (new offers, a
// rescind).
func (s *Scheduler) offersFromStream(ctx context.Context, f func(ctx context.Context)) {
	if ctx.Err() == nil {
		s.enqueue(inboxItem{f: f, offer: true})
	}
}

func (s *Scheduler) enqueue(it inboxItem) {
	s.inboxMu.Lock()
	s.inbox = append(s.inbox, it)
	if it.f == nil {
		s.inboxUpdates++
	}
	s.inboxMu.Unlock()
	s.Wake()
}

// updatesPerTurn bounds the status updates one turn of the loop handles:
// the rest wait for the next turn, after the launch round, so a large
// backlog (a burst of tasks ending together) delays launching by one
// turn's work, not by the whole backlog's.
const updatesPerTurn = 8 * maxBatch

// backlogHold: launch rounds wait while more status updates than this are
// queued for the loop, so launching cannot outrun the handling (and the
// acknowledgement) of what it launched: each launch brings at least two
// updates, and Mesos keeps the unacknowledged ones.
const backlogHold = 4 * updatesPerTurn

// backlogged reports whether launch rounds should wait for the status
// updates queued for the loop. Not the term's first round that can launch
// (st.firstLaunch; one commit's worth): at a takeover the engine resends
// every update the old leader left unacknowledged besides the
// reconciliation's answers (at 100,000 jobs 6,224 and 2,043), and the
// first launch would wait for them.
func (s *Scheduler) backlogged() bool {
	if s.st.firstLaunch {
		return false
	}
	s.inboxMu.Lock()
	defer s.inboxMu.Unlock()
	return s.inboxUpdates > backlogHold
}

// handleUpdates handles what the stream queued, in its order (at most
// updatesPerTurn status updates, the rest in the next turn): status
// updates maxBatch at a time, each through a store/txn batch that reads its
// predecessors' writes, then one commit for the batch, then the
// acknowledgements; the updates queued before another event are committed
// before that event is handled. An offer event (new offers, a rescind) is
// held at once and commits nothing: an offer is independent of the updates
// before it (offersAhead), and the launch round that uses it comes after the
// turn's updates all the same. Flushing before it split a turn's batch at
// every OFFERS event (a simulated Mesos cluster sends one each time tasks'
// ends free an agent no offer is outstanding on), and each batch pays a
// commit and a sync of the history. If a commit fails (leadership lost, the
// store unreachable, a concurrent write) nothing of the batch is
// acknowledged: Mesos resends the updates, and the running mirror is
// reloaded. Updates whose Mesos client has stopped are dropped (Mesos
// resends them to the next subscription).
func (s *Scheduler) handleUpdates(ctx context.Context) {
	if len(s.st.awaiting) > 0 {
		s.answerQueued()
	}
	in := s.takeInbox()
	for _, it := range in {
		if it.f != nil {
			if !it.offer {
				s.flushUpdates(ctx)
			}
			it.f(ctx)
			continue
		}
		if it.u.ctx == nil || it.u.ctx.Err() == nil {
			s.updates = append(s.updates, it.u)
		}
	}
	s.flushUpdates(ctx)
	clear(in) // nothing else refers to it now; the events' closures and contexts go
}

// answerQueued counts every status update queued for the loop as an
// answer to the reconciliation that holds launching back, before it is
// handled: at a takeover the engine answers for thousands of tasks at
// once (most of them ended while no leader ran), and handling them all
// took seconds before the term's first launch round. Launching on an
// answer not yet handled is safe: until it is, the registry still holds
// the task as running, so its job's work waits (a lost task is queued
// again once its update is handled); what the reconciliation guards
// against — launching on a view the engine has not confirmed — is
// answered by the update's arrival. Fenced writes and exactly-once are
// unchanged: the round commits under the term's fence as before.
func (s *Scheduler) answerQueued() {
	s.inboxMu.Lock()
	defer s.inboxMu.Unlock()
	for _, it := range s.inbox {
		if it.f == nil && (it.u.ctx == nil || it.u.ctx.Err() == nil) {
			s.recon.answered(it.u.st.TaskID)
		}
	}
}

// takeInbox takes the head of the inbox, in its order: the events up to
// the (updatesPerTurn+1)th status update; the rest wait for the next turn
// (woken). The inbox is sliced, not copied: with a backlog of thousands
// of updates, copying the rest back each turn was a tenth of what the
// loop allocated.
//
// A subscription's event ends the take, with the offers queued after it
// (offersAhead): the turn that handles it (the reconciliation's question,
// st.firstLaunch set) goes on to its launch round, instead of first
// handling the updates queued behind it (a takeover's: the old leader's
// unacknowledged ones, then the answers, thousands at 100,000 jobs; a
// turn took updatesPerTurn of them, seconds of handling on the etcd shape,
// before the offers behind them were even held). Until the term's first
// round that can launch, a turn takes maxBatch updates, and none while
// offers are held or queued (the round that uses them runs this turn:
// Scheduler.turn).
func (s *Scheduler) takeInbox() []inboxItem {
	s.inboxMu.Lock()
	defer s.inboxMu.Unlock()
	k, taken, limit := 0, 0, updatesPerTurn
	first := s.st.firstLaunch
	if first {
		limit = maxBatch // the term's first launch round comes after one batch, not after the whole backlog
		if s.st.subscribed && (len(s.st.offers) > 0 || s.offerQueued()) {
			limit = 0 // ... or after none: its offers are here
		}
	}
	cut := false
	for ; k < len(s.inbox) && !cut; k++ {
		if s.inbox[k].f != nil {
			cut = s.inbox[k].subscribe
			continue
		}
		if taken == limit {
			break
		}
		taken++
	}
	in := s.inbox[:k:k]
	s.inbox = s.inbox[k:]
	s.inboxUpdates -= taken
	if first || cut {
		in = s.offersAhead(in)
	}
	if len(s.inbox) > 0 {
		s.Wake()
	}
	return in
}

// offerQueued reports whether an offer event is queued ahead of every
// event other than status updates (what offersAhead would move). Under
// inboxMu.
func (s *Scheduler) offerQueued() bool {
	for _, it := range s.inbox {
		if it.offer {
			return true
		}
		if it.f != nil {
			return false
		}
	}
	return false
}

// offersAhead moves the offer events queued behind the status updates
// left for later turns into this turn (after its updates), up to the first
// other event: at a takeover the engine's offers arrive behind thousands
// of reconciliation answers, and the term's first launch round waited for
// all of them to be handled. An offer is independent of the updates before
// it (a task's end not yet handled keeps its job's work waiting: the
// registry still holds it running); its order with the stream's other
// events (a subscription, a disconnection, an executor's end) is kept.
// Under inboxMu.
func (s *Scheduler) offersAhead(in []inboxItem) []inboxItem {
	rest := s.inbox[:0:0]
	for i, it := range s.inbox {
		if it.f != nil && !it.offer {
			rest = append(rest, s.inbox[i:]...)
			break
		}
		if it.offer {
			in = append(in, it)
			continue
		}
		rest = append(rest, it)
	}
	s.inbox = rest
	return in
}

// flushUpdates handles the updates taken so far: maxBatch at a time, each
// such part one part of a chained batch (registry.ChainedBatch), whose
// parts are committed together, on ZooKeeper as multis sent back to back
// (one round trip for a turn's updates, not one per part). Each part is
// applied only if every part before it was, so the updates of the applied
// parts are acknowledged and the rest are not (the engine resends them);
// after a failed part the running mirror is reloaded. Before the commit,
// the history the updates recorded is made durable (statusHandler.durable):
// an update is acknowledged only once its history is on disk.
func (s *Scheduler) flushUpdates(ctx context.Context) {
	all := s.updates
	if len(all) > 0 {
		s.handleChain(ctx, all)
	}
	clear(all)
	s.updates = all[:0] // its array is reused by the next turn
}

func (s *Scheduler) handleChain(ctx context.Context, updates []pendingUpdate) {
	if g, ok := s.deps.Gauges.(observe.StatusBatches); ok {
		began := time.Now() // wall clock, for the metric only
		defer func() { g.StatusBatch(len(updates), time.Since(began)) }()
	}
	b, cut, flush := s.deps.Registry.ChainedBatch()
	handled := make([]bool, len(updates))
	for i, u := range updates {
		if i > 0 && i%maxBatch == 0 {
			cut()
		}
		err := s.status.handle(ctx, b, u.st)
		if err != nil && ctx.Err() == nil {
			s.deps.Log.Warn("status: update not applied; the engine resends it", "task", u.st.TaskID, "state", u.st.State, "err", err)
		}
		handled[i] = err == nil
	}
	if err := s.status.durable(ctx); err != nil {
		s.deps.Log.Warn("status: the history of a batch of updates is not on disk; not committing them, the engine resends them",
			"updates", len(updates), "err", err)
		s.st.reloadRunning()
		for _, u := range updates {
			u.done(false)
		}
		return
	}
	applied, err := flush(ctx)
	acked := len(updates) // every part applied, the last one too when it wrote nothing (it is then no part of the chain)
	if err != nil {
		acked = min(applied*maxBatch, len(updates))
		s.deps.Log.Warn("status: commit a batch of updates; the engine resends those not committed", "updates", len(updates),
			"committed", acked, "err", err)
		s.st.reloadRunning()
	}
	for i, u := range updates {
		u.done(i < acked && handled[i])
	}
}

package clusters

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/task"
)

// Run runs every cluster's event stream and feeds h with their events, one at a time
// (a Handler is called from one goroutine's worth of order), the ids qualified. It returns
// when ctx ends; a cluster whose Run ends early is logged and left down while the others
// go on, and Run returns early only when every cluster's has ended.
func (e *Engine) Run(ctx context.Context, h engine.Handler) error {
	out := &serial{h: h}
	e.mu.Lock()
	e.out = out
	e.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(e.members))
	for i, m := range e.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.Term.Run(ctx, &memberHandler{e: e, m: m, out: out})
			if ctx.Err() == nil {
				e.log.Error("a cluster's engine stopped; the other clusters go on", "cluster", m.Name, "err", err)
				e.lost(ctx, m, out, fmt.Errorf("its engine stopped: %v", err))
			}
			errs[i] = wrap(m, err)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return errors.Join(errs...)
}

// serial passes events to the scheduler's handler one at a time, in each cluster's order.
type serial struct {
	mu sync.Mutex
	h  engine.Handler
}

func (s *serial) do(f func(h engine.Handler)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.h)
}

// lost marks m disconnected and withdraws its outstanding offers; the scheduler hears
// Disconnected only when no cluster is left connected.
func (e *Engine) lost(ctx context.Context, m *member, out *serial, err error) {
	e.mu.Lock()
	was := m.connected
	m.connected, m.lastErr = false, err.Error()
	if was {
		m.since = e.clock.Now()
	}
	var gone []string
	for id, om := range e.offers {
		if om == m {
			gone = append(gone, id)
			delete(e.offers, id)
		}
	}
	// Its tasks cannot be heard of while it is away: each is reported unreachable since it
	// was lost, which the scheduler counts lost past task_unreachable_timeout (their shards
	// then run elsewhere; if the cluster comes back, a task still running there that was
	// replaced is an orphan to the scheduler and is killed).
	var away []engine.Status
	for id, p := range e.tasks {
		if p.m == m {
			away = append(away, engine.Status{TaskID: id, AgentID: p.agent, State: task.Unreachable, Source: task.SourceMaster,
				UnreachableSince: m.since, Timestamp: e.clock.Now(), LostCluster: m.Name, Message: fmt.Sprintf("cluster %s is unreachable: %s", m.Name, m.lastErr)})
		}
	}
	sort.Slice(away, func(i, j int) bool { return away[i].TaskID < away[j].TaskID })
	anyUp := false
	for _, o := range e.members {
		anyUp = anyUp || o.connected
	}
	e.mu.Unlock()
	out.do(func(h engine.Handler) {
		for _, id := range gone {
			h.Rescinded(ctx, id)
		}
		for _, st := range away {
			h.UpdateAsync(ctx, st, func(bool) {})
		}
		if !anyUp {
			h.Disconnected(ctx, err)
		}
	})
}

// memberHandler is one cluster's handler: it qualifies the cluster's ids and passes the
// events on.
type memberHandler struct {
	e   *Engine
	m   *member
	out *serial
}

func (mh *memberHandler) q(id string) string { return engine.QualifyID(mh.m.Name, id) }

func (mh *memberHandler) Subscribed(ctx context.Context, frameworkID string) {
	e := mh.e
	e.mu.Lock()
	mh.m.frameworkID, mh.m.lastErr = frameworkID, ""
	if !mh.m.connected {
		mh.m.connected, mh.m.since = true, e.clock.Now()
	}
	id := e.frameworkID()
	e.mu.Unlock()
	mh.out.do(func(h engine.Handler) { h.Subscribed(ctx, id) })
}

func (mh *memberHandler) Offers(ctx context.Context, offers []engine.Offer) {
	own := make([]engine.Offer, len(offers))
	mh.e.mu.Lock()
	for i, o := range offers {
		o.ID, o.AgentID = mh.q(o.ID), mh.q(o.AgentID)
		mh.e.offers[o.ID] = mh.m
		own[i] = o
	}
	mh.e.mu.Unlock()
	mh.out.do(func(h engine.Handler) { h.Offers(ctx, own) })
}

func (mh *memberHandler) Rescinded(ctx context.Context, offerID string) {
	id := mh.q(offerID)
	mh.e.mu.Lock()
	delete(mh.e.offers, id)
	mh.e.mu.Unlock()
	mh.out.do(func(h engine.Handler) { h.Rescinded(ctx, id) })
}

func (mh *memberHandler) UpdateAsync(ctx context.Context, s engine.Status, done func(bool)) {
	s.AgentID = mh.q(s.AgentID)
	mh.e.mu.Lock()
	if s.State.Terminal() {
		delete(mh.e.tasks, s.TaskID)
	} else {
		mh.e.tasks[s.TaskID] = placed{m: mh.m, agent: s.AgentID}
	}
	mh.e.mu.Unlock()
	mh.out.do(func(h engine.Handler) { h.UpdateAsync(ctx, s, done) })
}

func (mh *memberHandler) Message(ctx context.Context, agentID, executorID string, data []byte) {
	agent := mh.q(agentID)
	mh.out.do(func(h engine.Handler) { h.Message(ctx, agent, executorID, data) })
}

func (mh *memberHandler) Failure(ctx context.Context, agentID, executorID string, status *int32) {
	agent := mh.q(agentID)
	mh.out.do(func(h engine.Handler) { h.Failure(ctx, agent, executorID, status) })
}

func (mh *memberHandler) Disconnected(ctx context.Context, err error) {
	mh.e.lost(ctx, mh.m, mh.out, err)
}

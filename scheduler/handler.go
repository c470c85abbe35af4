package scheduler

import (
	"context"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/offers"
)

var _ mesos.Handler = (*Scheduler)(nil)

// Subscribed persists the framework id, then reconciles every task.
func (s *Scheduler) Subscribed(ctx context.Context, frameworkID string) {
	s.fromStream(ctx, func(ctx context.Context) {
		s.subscribed = true
		s.suppressed = false
		if err := s.Registry.SetFrameworkID(ctx, frameworkID); err != nil {
			s.Log.Error("persist framework id", "err", err)
		}
		s.beginReconcile(ctx)
		s.reconcile(ctx, false)
	})
}

// Offers holds new offers until the next launch round.
func (s *Scheduler) Offers(ctx context.Context, os []mesos.Offer) {
	s.fromStream(ctx, func(context.Context) {
		for _, o := range os {
			s.offers[o.ID] = o
		}
		s.Observer.OffersSeen(len(os), 0)
	})
}

// Rescinded forgets an offer.
func (s *Scheduler) Rescinded(ctx context.Context, offerID string) {
	s.fromStream(ctx, func(context.Context) { delete(s.offers, offerID) })
}

// Update applies a status update; the client acknowledges it when this
// returns nil, i.e. once the state change is committed.
func (s *Scheduler) Update(ctx context.Context, st mesos.Status) error {
	return s.call(ctx, func(ctx context.Context) error { return s.onStatus(ctx, st) })
}

// Message receives executor messages: daemon run reports.
func (s *Scheduler) Message(ctx context.Context, agentID, executorID string, data []byte) {
	rep, err := jobs.ParseDaemonReport(data)
	if err != nil {
		s.Log.Warn("executor message ignored", "agent", agentID, "executor", executorID, "err", err)
		return
	}
	s.fromStream(ctx, func(ctx context.Context) { s.onDaemonReport(ctx, agentID, rep) })
}

// Failure forgets a terminated executor, or every executor of a lost agent.
func (s *Scheduler) Failure(ctx context.Context, agentID, executorID string, status *int32) {
	s.fromStream(ctx, func(context.Context) {
		if executorID != "" {
			if appName, _, err := jobs.ParseExecutorID(executorID); err == nil {
				delete(s.executors, offers.ExecutorKey{App: appName, AgentID: agentID})
			}
			return
		}
		for k := range s.executors {
			if k.AgentID == agentID {
				delete(s.executors, k)
			}
		}
	})
}

// Disconnected voids outstanding offers until the next subscription.
func (s *Scheduler) Disconnected(ctx context.Context, err error) {
	s.fromStream(ctx, func(context.Context) {
		s.subscribed = false
		clear(s.offers)
		s.Log.Warn("mesos connection lost", "err", err)
	})
}

package scheduler

import (
	"context"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
)

var _ engine.Handler = (*Scheduler)(nil)

// The engine's events, each handled on the loop in the stream's order
// (batch.go queues them behind the status updates that came before).

// Subscribed persists the framework id, then reconciles every task.
func (s *Scheduler) Subscribed(ctx context.Context, frameworkID string) {
	s.subscriptionFromStream(ctx, func(ctx context.Context) { s.recon.subscribed(ctx, frameworkID) })
}

// Offers holds new offers until the next launch round.
func (s *Scheduler) Offers(ctx context.Context, os []engine.Offer) {
	if !s.offersArrived.Swap(true) {
		s.deps.Log.Info("the term's first offers arrived", "offers", len(os))
	}
	s.offersFromStream(ctx, func(context.Context) {
		if !s.st.offersHandled {
			s.st.offersHandled = true
			s.deps.Log.Debug("the term's first offers handled", "offers", len(os))
		}
		for _, o := range os {
			s.st.offers[o.ID] = o
		}
		s.st.noteOffers(os)
		s.deps.Gauges.OffersSeen(len(os), 0)
	})
}

// Rescinded forgets an offer.
func (s *Scheduler) Rescinded(ctx context.Context, offerID string) {
	s.offersFromStream(ctx, func(context.Context) { delete(s.st.offers, offerID) })
}

// Message receives executor messages: daemon run reports.
func (s *Scheduler) Message(ctx context.Context, agentID, executorID string, data []byte) {
	rep, err := jobs.ParseDaemonReport(data)
	if err != nil {
		s.deps.Log.Warn("executor message ignored", "agent", agentID, "executor", executorID, "err", err)
		return
	}
	s.fromStream(ctx, func(ctx context.Context) { s.status.daemonReport(ctx, s.deps.Registry, agentID, executorID, rep) })
}

// Failure forgets a terminated executor, or every executor of a lost agent.
func (s *Scheduler) Failure(ctx context.Context, agentID, executorID string, status *int32) {
	s.fromStream(ctx, func(context.Context) {
		if executorID != "" {
			if appName, _, err := jobs.ParseExecutorID(executorID); err == nil {
				delete(s.st.executors, offers.ExecutorKey{App: appName, AgentID: agentID})
			}
			return
		}
		for k := range s.st.executors {
			if k.AgentID == agentID {
				delete(s.st.executors, k)
			}
		}
	})
}

// Disconnected voids outstanding offers until the next subscription.
func (s *Scheduler) Disconnected(ctx context.Context, err error) {
	s.fromStream(ctx, func(context.Context) {
		s.st.subscribed = false
		clear(s.st.offers)
		s.deps.Log.Warn("engine connection lost", "err", err)
	})
}

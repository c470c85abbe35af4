package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/engine"
)

// Guard returns a Driver that makes no call to Mesos unless valid() says
// the leader may act (its term has not ended and its lease is confirmed).
// ZooKeeper fences the leader's registry writes; this fences the calls
// ZooKeeper cannot: a leader paused past its session timeout finds its
// lease lapsed the instant it runs again, so an ACCEPT it had in flight is
// never sent.
func Guard(d engine.Driver, valid func() error) engine.Driver {
	return Fence(d, func(context.Context) error { return valid() })
}

// Fence is Guard with a check that may read the store under the call's
// context: on etcd, a linearizable read proving that the term still leads
// (election.Term.Proven), so that a leader paused past the election and
// resumed sends nothing, even where its lease alone would not yet have
// told it.
func Fence(d engine.Driver, may func(context.Context) error) engine.Driver { return guarded{d, may} }

// ErrRefused marks a call the fence refused before sending it: the engine
// never got it, so what it carried (an ACCEPT's offers) is still the
// scheduler's to use or decline.
var ErrRefused = errors.New("refused before the call")

type guarded struct {
	d     engine.Driver
	valid func(context.Context) error
}

var _ engine.Driver = guarded{}

// Capabilities passes on the guarded engine's declaration; with Accepts > 1 each ACCEPT is
// still checked on its own.
func (g guarded) Capabilities() engine.Capabilities { return g.d.Capabilities() }

// Lane passes on the guarded engine's lanes (engine.Lanes); an engine without them has
// one lane of its Accepts.
func (g guarded) Lane(agentID string) (string, int) {
	if l, ok := g.d.(engine.Lanes); ok {
		return l.Lane(agentID)
	}
	return "", g.d.Capabilities().InFlight()
}

// RoundTasks passes on the guarded engine's clusters' bounds (engine.ClusterRounds); an
// engine without them bounds none.
func (g guarded) RoundTasks(cluster string) int {
	if r, ok := g.d.(engine.ClusterRounds); ok {
		return r.RoundTasks(cluster)
	}
	return 0
}

var (
	_ engine.Lanes         = guarded{}
	_ engine.ClusterRounds = guarded{}
)

// NamespaceCaps passes on the guarded engine's caps: an in-memory read, no call.
func (g guarded) NamespaceCaps(namespaces []string) map[string]engine.NamespaceCap {
	return g.d.NamespaceCaps(namespaces)
}

func (g guarded) check(ctx context.Context, call string) error {
	if err := g.valid(ctx); err != nil {
		return fmt.Errorf("%s %w: %w", call, ErrRefused, err)
	}
	return nil
}

func (g guarded) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	if err := g.check(ctx, "ACCEPT"); err != nil {
		return err
	}
	return g.d.Accept(ctx, offerIDs, launches, refuse)
}

func (g guarded) Decline(ctx context.Context, offerIDs []string, refuse time.Duration) error {
	if err := g.check(ctx, "DECLINE"); err != nil {
		return err
	}
	return g.d.Decline(ctx, offerIDs, refuse)
}

func (g guarded) Suppress(ctx context.Context) error {
	if err := g.check(ctx, "SUPPRESS"); err != nil {
		return err
	}
	return g.d.Suppress(ctx)
}

func (g guarded) Revive(ctx context.Context) error {
	if err := g.check(ctx, "REVIVE"); err != nil {
		return err
	}
	return g.d.Revive(ctx)
}

func (g guarded) Kill(ctx context.Context, taskID, agentID string) error {
	if err := g.check(ctx, "KILL"); err != nil {
		return err
	}
	return g.d.Kill(ctx, taskID, agentID)
}

func (g guarded) Reconcile(ctx context.Context, tasks []engine.TaskRef) error {
	if err := g.check(ctx, "RECONCILE"); err != nil {
		return err
	}
	return g.d.Reconcile(ctx, tasks)
}

func (g guarded) Shutdown(ctx context.Context, executorID, agentID string) error {
	if err := g.check(ctx, "SHUTDOWN"); err != nil {
		return err
	}
	return g.d.Shutdown(ctx, executorID, agentID)
}

package scheduler

import (
	"context"
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
func Guard(d engine.Driver, valid func() error) engine.Driver { return guarded{d, valid} }

type guarded struct {
	d     engine.Driver
	valid func() error
}

var _ engine.Driver = guarded{}

// Capabilities passes on the guarded engine's declaration; with Accepts > 1 each ACCEPT is
// still checked on its own.
func (g guarded) Capabilities() engine.Capabilities { return g.d.Capabilities() }

// NamespaceCaps passes on the guarded engine's caps: an in-memory read, no call.
func (g guarded) NamespaceCaps(namespaces []string) map[string]engine.NamespaceCap {
	return g.d.NamespaceCaps(namespaces)
}

func (g guarded) check(call string) error {
	if err := g.valid(); err != nil {
		return fmt.Errorf("%s refused: %w", call, err)
	}
	return nil
}

func (g guarded) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	if err := g.check("ACCEPT"); err != nil {
		return err
	}
	return g.d.Accept(ctx, offerIDs, launches, refuse)
}

func (g guarded) Decline(ctx context.Context, offerIDs []string, refuse time.Duration) error {
	if err := g.check("DECLINE"); err != nil {
		return err
	}
	return g.d.Decline(ctx, offerIDs, refuse)
}

func (g guarded) Suppress(ctx context.Context) error {
	if err := g.check("SUPPRESS"); err != nil {
		return err
	}
	return g.d.Suppress(ctx)
}

func (g guarded) Revive(ctx context.Context) error {
	if err := g.check("REVIVE"); err != nil {
		return err
	}
	return g.d.Revive(ctx)
}

func (g guarded) Kill(ctx context.Context, taskID, agentID string) error {
	if err := g.check("KILL"); err != nil {
		return err
	}
	return g.d.Kill(ctx, taskID, agentID)
}

func (g guarded) Reconcile(ctx context.Context, tasks []engine.TaskRef) error {
	if err := g.check("RECONCILE"); err != nil {
		return err
	}
	return g.d.Reconcile(ctx, tasks)
}

func (g guarded) Shutdown(ctx context.Context, executorID, agentID string) error {
	if err := g.check("SHUTDOWN"); err != nil {
		return err
	}
	return g.d.Shutdown(ctx, executorID, agentID)
}

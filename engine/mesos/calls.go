package mesos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/ejcloud/elasticjob/engine"
)

// Accept accepts offerIDs (all from one agent) and launches tasks on them. Task resources are
// carved from the offers' own resource objects. What the launches leave of the offers is
// filtered for refuse (see Decline). After a successful call the offers are used up.
func (c *Client) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	sess, fid, err := c.current()
	if err != nil {
		return fmt.Errorf("ACCEPT: %w", err)
	}
	offers, err := c.heldOffers(offerIDs)
	if err != nil {
		return fmt.Errorf("ACCEPT: %w", err)
	}
	tasks, err := c.taskInfos(fid, offers, launches)
	if err != nil {
		return fmt.Errorf("ACCEPT: %w", err)
	}
	c.adoptRunning(ctx, sess, fid, offers, tasks)
	var ops calls.OfferOperations
	if len(tasks) > 0 {
		ops = append(ops, calls.OpLaunch(tasks...))
	}
	call := calls.Accept(ops.WithOffers(offerIDList(offerIDs)...))
	call.Accept.Filters = c.filters(refuse)
	if err := c.call(ctx, call); err != nil {
		if sentMaybe(err) {
			return fmt.Errorf("%w: %w", engine.ErrOutcomeUnknown, err)
		}
		if masterDown(err) {
			return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
		}
		return err
	}
	c.dropOffers(offerIDs)
	c.rememberExecutors(tasks)
	return nil
}

// sentMaybe reports whether a call that failed may still have reached the master and been
// carried out: the request went out, or may have, and no answer came back (the connection
// closed or reset under it, a timeout). A connection that was never made, or an answer of
// the master's (an HTTP status), is no such case: nothing was done.
func sentMaybe(err error) bool {
	var api *apierrors.Error
	if errors.As(err, &api) {
		return false
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// masterDown reports whether a call that was not carried out failed because the master
// could not take it now: its connection refused (no master there), or its answer that it
// cannot serve now (503) or that the framework calls too fast (429). The scheduler then
// waits before launching again (engine.ErrUnavailable).
func masterDown(err error) bool {
	var api *apierrors.Error
	if errors.As(err, &api) {
		return api.Temporary()
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// acceptsInFlight bounds the ACCEPTs a launch round has in flight together
// (engine.Capabilities.Accepts): each is one HTTP call, the master handles them in its own
// order, and one for each agent in turn made the round wait for as many round trips as it had
// agents. Accept is safe to call for several agents at once: the offers and executors it
// reads and changes are under the client's lock.
const acceptsInFlight = 8

// Decline declines offerIDs; their resources are not offered again for refuse
// (0: Config.RefuseSeconds; negative: no filter).
func (c *Client) Decline(ctx context.Context, offerIDs []string, refuse time.Duration) error {
	call := calls.Decline(offerIDList(offerIDs)...)
	call.Decline.Filters = c.filters(refuse)
	if err := c.call(ctx, call); err != nil {
		return err
	}
	c.dropOffers(offerIDs)
	return nil
}

// Suppress asks the master to stop sending offers until Revive.
func (c *Client) Suppress(ctx context.Context) error { return c.call(ctx, calls.Suppress()) }

// Revive asks the master to offer again, clearing all decline filters.
func (c *Client) Revive(ctx context.Context) error { return c.call(ctx, calls.Revive()) }

// Kill kills a task; agentID may be "" when unknown.
func (c *Client) Kill(ctx context.Context, taskID, agentID string) error {
	return c.call(ctx, calls.Kill(taskID, agentID))
}

// Reconcile asks for the latest state of tasks (explicit), or of all tasks the master knows
// for this framework when tasks is empty (implicit). Answers arrive as updates without uuid.
func (c *Client) Reconcile(ctx context.Context, tasks []engine.TaskRef) error {
	rt := make([]scheduler.Call_Reconcile_Task, 0, len(tasks))
	for _, t := range tasks {
		task := scheduler.Call_Reconcile_Task{TaskID: mesos.TaskID{Value: t.TaskID}}
		if t.AgentID != "" {
			task.AgentID = &mesos.AgentID{Value: t.AgentID}
		}
		rt = append(rt, task)
	}
	call := calls.Reconcile()
	call.Reconcile.Tasks = rt
	return c.call(ctx, call)
}

// Shutdown stops an executor and all its tasks.
func (c *Client) Shutdown(ctx context.Context, executorID, agentID string) error {
	return c.call(ctx, calls.Shutdown(executorID, agentID))
}

// SendMessage sends a framework message to an executor.
func (c *Client) SendMessage(ctx context.Context, agentID, executorID string, data []byte) error {
	return c.call(ctx, calls.Message(agentID, executorID, data))
}

// filters returns the refuse filter for ACCEPT and DECLINE.
func (c *Client) filters(refuse time.Duration) *mesos.Filters {
	secs := c.cfg.RefuseSeconds
	switch {
	case refuse > 0:
		secs = refuse.Seconds()
	case refuse < 0:
		secs = 0
	}
	return &mesos.Filters{RefuseSeconds: &secs}
}

func offerIDList(ids []string) []mesos.OfferID {
	out := make([]mesos.OfferID, len(ids))
	for i, id := range ids {
		out[i] = mesos.OfferID{Value: id}
	}
	return out
}

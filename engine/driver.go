package engine

import (
	"context"
	"time"
)

// Driver is what the scheduler asks of its cluster engine: the Mesos
// scheduler API client (embedded master or a real cluster), or the
// Kubernetes engine. Calls name offers, tasks and executors by the ids
// the engine handed out (Offer.ID, TaskLaunch.TaskID, AgentID).
type Driver interface {
	// Accept launches tasks on the resources of the given offers (all of
	// one agent). refuse filters the offers' unused resources (< 0: none).
	Accept(ctx context.Context, offerIDs []string, launches []TaskLaunch, refuse time.Duration) error
	// Decline gives offers back; they are not offered again for refuse.
	Decline(ctx context.Context, offerIDs []string, refuse time.Duration) error
	// Suppress stops offers until Revive.
	Suppress(ctx context.Context) error
	Revive(ctx context.Context) error
	Kill(ctx context.Context, taskID, agentID string) error
	// Reconcile asks for the latest state of the tasks (explicit), or of
	// every task the engine knows of this framework (implicit: none
	// named); answers come as status updates with reason
	// task.ReasonReconciliation.
	Reconcile(ctx context.Context, tasks []TaskRef) error
	// Shutdown ends one executor (an app's on one agent) and its tasks.
	Shutdown(ctx context.Context, executorID, agentID string) error
	// Capabilities is what the engine declares (the same value its API side declares):
	// the launch round reads ExecutorSharing and Accepts from it.
	Capabilities() Capabilities
	NamespaceCaps
}

// Agent is one agent (a Mesos agent, a Kubernetes node) with the total
// resources it can give tasks: what the launcher compares an execution
// against to tell "waits for resources to free up" from "can never fit".
type Agent struct {
	ID, Hostname string
	CPUs, MemMB  float64
}

// Inventory lists the agents an engine can launch on, with their totals
// (Mesos: the master's agent list; Kubernetes: schedulable nodes'
// allocatable resources).
type Inventory interface {
	Agents(ctx context.Context) ([]Agent, error)
}

package mesos

import "github.com/ejcloud/elasticjob/engine"

// Capabilities is what the Mesos engine declares, embedded or real: tasks survive a restart
// when the framework checkpoints; the tasks of one executor id on one agent run in one
// executor, which lives on after them until it ends or is shut down; logs, sandboxes, the
// cluster view and the agents' totals are read from the master and agents
// (engine/mesos/agents); a round's ACCEPTs go acceptsInFlight at a time.
func Capabilities(checkpoint bool) engine.Capabilities {
	return engine.Capabilities{Checkpointing: checkpoint, ExecutorSharing: true, Logs: true, Sandboxes: true,
		ClusterView: true, Capacity: true, Accepts: acceptsInFlight}
}

// Capabilities is the client's engine's (Capabilities), with checkpointing as its
// FrameworkInfo says.
func (c *Client) Capabilities() engine.Capabilities { return Capabilities(!c.cfg.NoCheckpoint) }

// NamespaceCaps is nil: Mesos caps no namespace of the scheduler's.
func (c *Client) NamespaceCaps([]string) map[string]engine.NamespaceCap { return nil }

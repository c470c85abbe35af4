package embedded

import (
	"net"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// agent is one agent of the cluster: the real one (this machine, running
// executor processes) or, in simulation mode only, one of Config.Sim.Agents
// simulated agents whose executors run in-process (sim.go). Everything the
// master does per agent (offers, decline filters, charging executors and
// tasks, status updates) is the same for both.
type agent struct {
	index    int // position in Cluster.agents: allocation order
	id       string
	hostname string
	total    mesos.Resources
	sim      bool

	live   map[*executor]bool // executors not terminated
	used   mesos.Resources    // held by live executors and unreleased tasks (charge, uncharge)
	free   mesos.Resources    // total - used - outstanding offers, kept up to date
	queued bool               // in Cluster.dirty
}

func newAgent(index int, id, hostname string, total mesos.Resources, sim bool) *agent {
	return &agent{index: index, id: id, hostname: hostname, total: total, sim: sim,
		live: map[*executor]bool{}, free: total.Clone()}
}

// usedResources is everything the agent's live executors and their
// unreleased tasks hold. It is kept up to date by charge and uncharge
// (Mesos scalars are fixed-point, so the running sum is exact) rather
// than summed over the agent's tasks at every allocation.
func (a *agent) usedResources() mesos.Resources { return a.used }

// agentInfo is the AgentInfo executors are given at subscription.
func (m *master) agentInfo(a *agent) mesos.AgentInfo {
	port := int32(m.port())
	return mesos.AgentInfo{
		Hostname:  a.hostname,
		Port:      &port,
		Resources: a.total.Clone(),
		ID:        &mesos.AgentID{Value: a.id},
	}
}

// agentURL is the agent's base URL as offers carry it. Every agent is
// served by this process.
func (m *master) agentURL(a *agent) *mesos.URL {
	port := int32(m.port())
	return &mesos.URL{
		Scheme:  "http",
		Address: mesos.Address{Hostname: &a.hostname, IP: strPtr("127.0.0.1"), Port: port},
		Path:    strPtr("/slave(1)"),
	}
}

// port is the port the cluster serves on (agents' and master's), 0
// before Start listens.
func (m *master) port() int { return m.listenPort }

// tcpPort is a listener's port.
func tcpPort(ln net.Listener) int {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

package embedded

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// master is the master's half of the cluster: the registered agents and
// their resource pools, the frameworks (their subscriptions, tasks and
// the status updates awaiting acknowledgement), outstanding offers,
// decline filters and the allocation queue. Its methods only keep that
// book: the decisions are pure functions (allocation.go); the offers side
// (outstanding offers, the allocation queue) is its allocator
// (allocator.go), and what reaches the network (offers, rescinds,
// updates) is sent by the allocator and by the methods of framework.go,
// updates.go and control.go.
//
// Cluster.mu guards it: an executor's end changes both halves in one step
// (its tasks' updates, the resources it frees, the offers that follows),
// so master and host share the cluster's lock rather than take two: the
// split into types is by concern, not by lock, and keeps every ordering
// the one lock gives.
type master struct {
	masterID   string            // the master id (offer and framework ids derive from it)
	agents     []*agent          // in allocation order; one real agent, or Config.Sim.Agents simulated ones
	byID       map[string]*agent // agents by id
	frameworks map[string]*framework
	removed    map[string]bool // torn-down framework ids
	allocator                  // outstanding offers, decline filters, the allocation queue (allocator.go)
	seq        int
	launched   float64 // tasks accepted for launch since start (embedded/tasks_launched)
	closing    bool    // the cluster is stopping: no allocation, no subscription

	// Set by New (and listenPort by Start).
	log         *slog.Logger
	lock        *sync.Mutex // Cluster.mu, taken by the master's timers (filters, update retries, failover)
	updateRetry time.Duration
	heartbeat   time.Duration
	hostname    string
	listenPort  int
	resized     func(*executor) // tells the host an executor holds less (its container's limits follow)
}

func newMaster(id string, agents []*agent, cfg Config, log *slog.Logger, lock *sync.Mutex) master {
	m := master{masterID: id, agents: agents, byID: map[string]*agent{}, frameworks: map[string]*framework{},
		removed: map[string]bool{}, log: log, lock: lock,
		updateRetry: cfg.UpdateRetryInterval, heartbeat: cfg.HeartbeatInterval, hostname: cfg.Hostname}
	for _, a := range agents {
		m.byID[a.id] = a
	}
	return m
}

// init links the master's parts to it; called once it has its final
// address (New builds it in place in the Cluster).
func (m *master) init() { m.allocator = allocator{m: m, offers: map[string]*offer{}} }

// nextID returns a cluster-unique sequence number.
func (m *master) nextID() int {
	m.seq++
	return m.seq
}

// agentOf resolves an agent id named in a call; nil when unknown.
func (m *master) agentOf(id string) *agent { return m.byID[id] }

// charge adds what an executor or a task holds to its agent.
func (m *master) charge(a *agent, rs mesos.Resources) {
	a.used.Add(rs...)
	a.free.Subtract(rs...)
	m.touch(a)
}

// uncharge releases what an executor or a task held; the agent is queued
// for allocation.
func (m *master) uncharge(a *agent, rs mesos.Resources) {
	a.used.Subtract(rs...)
	a.free.Add(rs...)
	m.touch(a)
}

// touch queues the agent for the next allocation: its free pool may have
// grown (resources released, an offer returned, a filter expired).
func (al *allocator) touch(a *agent) {
	if !a.queued {
		a.queued = true
		al.dirty = append(al.dirty, a)
	}
}

// touchAll queues every agent: a framework became eligible for offers
// (subscribed, revived).
func (al *allocator) touchAll() { al.allDirty = true }

// takeDirty returns the agents to allocate, in agent order, and clears the
// queue.
func (al *allocator) takeDirty() []*agent {
	out := agentsToAllocate(al.m.agents, al.dirty, al.allDirty)
	for _, a := range al.dirty {
		a.queued = false
	}
	al.dirty, al.allDirty = nil, false
	return out
}

// available is the agent's free pool: its total minus what its executors
// and tasks hold minus its outstanding offers. It is maintained as those
// change (no resource arithmetic per allocation); callers must not modify
// it.
func (al *allocator) available(a *agent) mesos.Resources { return a.free }

// used is what every agent's executors and tasks hold.
func (m *master) used() mesos.Resources {
	var used mesos.Resources
	for _, a := range m.agents {
		used.Add(a.usedResources()...)
	}
	return used
}

// totalResources is the sum of every agent's resources.
func (m *master) totalResources() mesos.Resources {
	var total mesos.Resources
	for _, a := range m.agents {
		total.Add(a.total...)
	}
	return total
}

// sortedFrameworks lists every registered framework by id.
func (m *master) sortedFrameworks() []*framework {
	out := make([]*framework, 0, len(m.frameworks))
	for _, fw := range m.frameworks {
		out = append(out, fw)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

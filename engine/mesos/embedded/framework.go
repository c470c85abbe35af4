package embedded

import (
	"fmt"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// framework is a registered framework, connected (sub != nil) or waiting
// for its failover timeout.
type framework struct {
	id         string
	info       mesos.FrameworkInfo
	sub        *eventStream
	suppressed bool
	filters    map[string][]*filter // decline filters by agent id
	offers     map[string]*offer    // outstanding offers by agent id (one per agent)
	executors  map[execKey]*executor
	tasks      map[string]*task
	completed  []*executor // recently terminated executors, for /state
	failover   *time.Timer
}

func (fw *framework) hasCapability(t mesos.FrameworkInfo_Capability_Type) bool {
	for _, c := range fw.info.Capabilities {
		if c.Type == t {
			return true
		}
	}
	return false
}

func (fw *framework) partitionAware() bool {
	return fw.hasCapability(mesos.FrameworkInfo_Capability_PARTITION_AWARE)
}

// allocationRole is the role offers carry in allocation_info, for
// MULTI_ROLE frameworks only.
func (fw *framework) allocationRole() (string, bool) {
	if !fw.hasCapability(mesos.FrameworkInfo_Capability_MULTI_ROLE) {
		return "", false
	}
	if len(fw.info.Roles) > 0 {
		return fw.info.Roles[0], true
	}
	return fw.info.GetRole(), true
}

// execKey names an executor: its id is unique per agent, as in Mesos.
type execKey struct{ agent, id string }

func keyOf(e *executor) execKey { return execKey{e.agent.id, e.id} }

// send queues an event for the framework if it is connected.
func (fw *framework) send(ev *scheduler.Event) bool {
	if fw.sub == nil {
		return false
	}
	return fw.sub.push(ev)
}

// admitSubscription decides whether a SUBSCRIBE is accepted: not while
// the master stops or the agent cleans up an earlier run, never for a
// framework id torn down (id is empty for a new framework).
func admitSubscription(closing bool, recoverMode, id string, removed map[string]bool) *httpError {
	switch {
	case closing:
		return errorf(503, "Master is shutting down")
	case recoverMode == RecoverCleanup:
		return errorf(503, "Agent is shutting down the executors of its earlier run (recover=cleanup)")
	case id != "" && removed[id]:
		return errorf(403, "Framework %s has been removed", id)
	}
	return nil
}

// subscribe registers or re-registers a framework and returns the stream
// that will carry its events.
func (c *Cluster) subscribe(info mesos.FrameworkInfo, format streamFormat, suppressed bool) (string, *eventStream, *httpError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := info.GetID().GetValue()
	if herr := admitSubscription(c.closing, c.cfg.Recover, id, c.removed); herr != nil {
		return "", nil, herr
	}
	if id == "" {
		id = fmt.Sprintf("%s-%04d", c.masterID, c.nextID())
	}
	info.ID = &mesos.FrameworkID{Value: id}
	fw := c.frameworks[id]
	if fw == nil {
		fw = &framework{id: id, executors: map[execKey]*executor{}, tasks: map[string]*task{},
			filters: map[string][]*filter{}, offers: map[string]*offer{}}
		c.frameworks[id] = fw
		c.log.Info("framework registered", "framework_id", id, "name", info.Name)
	} else {
		c.log.Info("framework re-subscribed", "framework_id", id, "name", info.Name)
		c.disconnect(fw, "a new subscription replaced this stream")
	}
	fw.info = info
	if c.ck != nil && len(fw.executors) > 0 && info.GetCheckpoint() {
		c.ck.framework(fw) // a recovered framework's info as its scheduler now gives it
	}
	fw.suppressed = suppressed
	if fw.failover != nil {
		fw.failover.Stop()
		fw.failover = nil
	}
	fw.sub = newEventStream(format, newUUID())
	c.sendSubscribed(fw)
	c.resendUpdates(fw)
	c.touchAll()
	c.allocate()
	return id, fw.sub, nil
}

func (m *master) sendSubscribed(fw *framework) {
	hb := m.heartbeat.Seconds()
	port := uint32(m.port())
	fw.send(&scheduler.Event{
		Type: scheduler.Event_SUBSCRIBED,
		Subscribed: &scheduler.Event_Subscribed{
			FrameworkID:              &mesos.FrameworkID{Value: fw.id},
			HeartbeatIntervalSeconds: &hb,
			MasterInfo: &mesos.MasterInfo{
				ID:       m.masterID,
				IP:       0x0100007f, // 127.0.0.1 in network byte order, as Mesos packs it
				Port:     &port,
				Hostname: &m.hostname,
				Version:  strPtr("1.11.0"),
				Address:  &mesos.Address{Hostname: &m.hostname, IP: strPtr("127.0.0.1"), Port: int32(port)},
			},
		},
	})
}

// disconnect closes the framework's stream (if any) and rescinds its offer.
func (m *master) disconnect(fw *framework, why string) {
	if fw.sub == nil {
		return
	}
	m.log.Info("framework disconnected", "framework_id", fw.id, "reason", why)
	fw.sub.close()
	fw.sub = nil
	m.removeOffers(fw, false)
}

// streamEnded is called when a subscription's HTTP stream terminates. The
// framework gets failover_timeout to come back before it is torn down.
func (c *Cluster) streamEnded(fwID string, s *eventStream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fw := c.frameworks[fwID]
	if fw == nil || fw.sub != s {
		return
	}
	c.disconnect(fw, "subscription stream ended")
	c.allocate()
	if c.closing {
		return // Close decides what becomes of its executors
	}
	c.awaitFramework(fw)
}

// awaitFramework gives a disconnected framework failover_timeout to
// subscribe again before it is torn down (at once without a timeout).
func (c *Cluster) awaitFramework(fw *framework) {
	timeout := time.Duration(fw.info.GetFailoverTimeout() * float64(time.Second))
	if timeout <= 0 {
		c.teardown(fw)
		return
	}
	c.log.Info("framework failover timeout started", "framework_id", fw.id, "timeout", timeout)
	fw.failover = time.AfterFunc(timeout, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if cur := c.frameworks[fw.id]; cur == fw && fw.sub == nil {
			c.log.Info("framework failover timeout expired", "framework_id", fw.id)
			c.teardown(fw)
		}
	})
}

// teardown removes the framework: shuts down its executors, drops its tasks
// and offers and refuses its id from now on.
func (c *Cluster) teardown(fw *framework) {
	c.log.Info("tearing down framework", "framework_id", fw.id)
	for _, e := range fw.executors {
		e.ck = nil // its framework is forgotten: nothing of it is recovered
		c.shutdownExecutor(e)
	}
	for _, e := range fw.completed {
		e.ck = nil
	}
	if c.ck != nil {
		c.ck.frameworkRemoved(fw.id)
	}
	for _, t := range fw.tasks {
		c.releaseTask(t)
		t.stopRetry()
		t.closeRecords()
	}
	fw.tasks = map[string]*task{}
	c.stopFramework(fw)
	delete(c.frameworks, fw.id)
	c.removed[fw.id] = true
	c.allocate()
}

// stopFramework closes the stream and stops the framework's timers.
func (m *master) stopFramework(fw *framework) {
	m.disconnect(fw, "framework stopped")
	if fw.failover != nil {
		fw.failover.Stop()
		fw.failover = nil
	}
	m.clearFilters(fw)
}

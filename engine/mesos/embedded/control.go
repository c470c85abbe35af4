package embedded

import (
	"slices"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// batch is one LAUNCH (a single task) or LAUNCH_GROUP waiting for the
// executor to subscribe.
type batch struct {
	tasks []*task
	group bool
}

// queue sends the batch at once to a connected executor or keeps it until
// the executor subscribes.
func (e *executor) queue(tasks []*task, group bool) {
	e.queued = append(e.queued, batch{tasks: tasks, group: group})
	if e.state == execRunning && e.stream != nil {
		e.flushQueue()
	}
}

// flushQueue sends LAUNCH/LAUNCH_GROUP for every queued batch in order.
func (e *executor) flushQueue() {
	if e.stream == nil {
		return
	}
	for _, b := range e.queued {
		var live []mesos.TaskInfo
		for _, t := range b.tasks {
			if !isTerminal(t.state) && !t.launched {
				t.launched = true
				if e.ck != nil {
					e.ck.record(t, record{Launched: true}) // before the executor hears of it
				}
				live = append(live, t.info)
			}
		}
		switch {
		case len(live) == 0:
		case b.group:
			e.send(&execpb.Event{Type: execpb.Event_LAUNCH_GROUP, LaunchGroup: &execpb.Event_LaunchGroup{
				TaskGroup: mesos.TaskGroupInfo{Tasks: live},
			}})
		default:
			e.send(&execpb.Event{Type: execpb.Event_LAUNCH, Launch: &execpb.Event_Launch{Task: live[0]}})
		}
	}
	e.queued = nil
}

// dropQueued marks tasks the (re-subscribing) executor already has as
// launched so they are not sent twice.
func (e *executor) dropQueued(known map[string]bool) {
	for _, b := range e.queued {
		for _, t := range b.tasks {
			if known[t.info.TaskID.Value] {
				t.launched = true
			}
		}
	}
}

// kill applies KILL: to the executor when the task was launched there,
// TASK_KILLED from the agent when it is still queued, reconciliation when
// the task is unknown (as a Mesos master does).
func (c *Cluster) kill(fw *framework, taskID string, agentID *mesos.AgentID) {
	t := fw.tasks[taskID]
	switch decideKill(t) {
	case killUnknown:
		task := scheduler.Call_Reconcile_Task{TaskID: mesos.TaskID{Value: taskID}, AgentID: agentID}
		c.reconcile(fw, []scheduler.Call_Reconcile_Task{task})
	case killEnded: // nothing to kill
	case killAtExecutor:
		if !t.exec.send(&execpb.Event{Type: execpb.Event_KILL, Kill: &execpb.Event_Kill{TaskID: t.info.TaskID}}) && !slices.Contains(t.exec.killsDue, taskID) {
			t.exec.killsDue = append(t.exec.killsDue, taskID)
		}
	case killQueued:
		e := t.exec
		c.agentUpdate(t, mesos.TASK_KILLED, mesos.REASON_TASK_KILLED_DURING_LAUNCH, "Killed before delivery to the executor")
		if e.state == execLaunching && len(e.liveTasks()) == 0 {
			c.shutdownExecutor(e)
		}
	}
}

// killAction is what a KILL does to a task.
type killAction int

const (
	killUnknown    killAction = iota // not known: answered as reconciliation (as a Mesos master does)
	killEnded                        // ended already: nothing
	killAtExecutor                   // sent to its executor: the executor kills it
	killQueued                       // not delivered yet: TASK_KILLED from the agent
)

// decideKill decides a KILL of t (nil when the framework has no such task).
func decideKill(t *task) killAction {
	switch {
	case t == nil:
		return killUnknown
	case isTerminal(t.state):
		return killEnded
	case t.launched:
		return killAtExecutor
	}
	return killQueued
}

// reconcile answers RECONCILE with reason REASON_RECONCILIATION: explicit
// for the listed tasks, implicit (every known task) for an empty list.
func (m *master) reconcile(fw *framework, tasks []scheduler.Call_Reconcile_Task) {
	if len(tasks) == 0 {
		for _, t := range sortedTasks(fw.tasks) {
			m.sendReconciled(fw, t)
		}
		return
	}
	for _, rt := range tasks {
		if t := fw.tasks[rt.TaskID.Value]; t != nil {
			m.sendReconciled(fw, t)
			continue
		}
		var onAgent *agent
		if rt.AgentID != nil {
			onAgent = m.agentOf(rt.AgentID.Value)
		}
		l := lossUnknown
		if onAgent != nil {
			l = lossUnknownOnAgent
		}
		state := lossState(fw.partitionAware(), l)
		m.masterUpdate(fw, rt.TaskID.Value, state, mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown", onAgent)
	}
}

func (m *master) sendReconciled(fw *framework, t *task) {
	st := t.status
	st.UUID = nil
	st.Source = mesos.SOURCE_MASTER.Enum()
	st.Reason = mesos.REASON_RECONCILIATION.Enum()
	st.Message = strPtr("Reconciliation: Latest task state")
	if t.exec != nil {
		st.AgentID = &mesos.AgentID{Value: t.exec.agent.id}
		st.ExecutorID = &mesos.ExecutorID{Value: t.exec.id}
	}
	ts := nowSeconds()
	st.Timestamp = &ts
	fw.send(&scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: st}})
}

package embedded

import (
	"bytes"
	"net/http"
	"os"
	"sort"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// maxRetry caps the backoff of unacknowledged status update retries.
const maxRetry = 10 * time.Minute

// maxDone bounds the completed tasks kept per executor for /state; a
// simulated executor keeps maxSimDone (thousands of them run at once).
const (
	maxDone    = 200
	maxSimDone = 10
)

// task is a task the agent knows: queued, launched or terminal but not yet
// acknowledged. Its reliable status updates form a stream: only the oldest
// unacknowledged update is forwarded (and retried) at a time.
type task struct {
	info      mesos.TaskInfo
	fw        *framework
	exec      *executor
	seq       int
	state     mesos.TaskState
	status    mesos.TaskStatus // latest
	resources mesos.Resources
	released  bool
	launched  bool
	pending   []pendingUpdate
	acked     map[string]bool
	retry     *time.Timer
	backoff   time.Duration
	records   *os.File // its checkpointed records, open for appending (appendRecord); nil: not open
	// fromExecutor counts the new updates taken from its executor (maxExecutorUpdates).
	fromExecutor int
}

type pendingUpdate struct {
	status       mesos.TaskStatus
	fromExecutor bool
}

func (t *task) stopRetry() {
	if t.retry != nil {
		t.retry.Stop()
		t.retry = nil
	}
}

func isTerminal(s mesos.TaskState) bool {
	switch s {
	case mesos.TASK_FINISHED, mesos.TASK_FAILED, mesos.TASK_KILLED, mesos.TASK_LOST,
		mesos.TASK_ERROR, mesos.TASK_DROPPED, mesos.TASK_GONE, mesos.TASK_GONE_BY_OPERATOR:
		return true
	}
	return false
}

func sortedTasks(m map[string]*task) []*task {
	out := make([]*task, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// releaseTask gives back what a task held (once).
func (m *master) releaseTask(t *task) {
	if t.released {
		return
	}
	t.released = true
	if t.exec != nil {
		m.uncharge(t.exec.agent, t.resources)
		m.resized(t.exec)
	}
}

// statusUpdate records a reliable (uuid-carrying) update and forwards it
// when it is the oldest unacknowledged one of its task.
func (m *master) statusUpdate(t *task, st mesos.TaskStatus, fromExecutor bool) {
	switch classifyUpdate(t.acked, t.pending, st.UUID) {
	case updateAcked:
		if fromExecutor {
			t.exec.send(acknowledged(t, st.UUID))
		}
		return
	case updateDuplicate:
		return // an update in flight
	}
	if t.exec != nil {
		st.AgentID = &mesos.AgentID{Value: t.exec.agent.id}
		st.ExecutorID = &mesos.ExecutorID{Value: t.exec.id}
	}
	if st.Timestamp == nil {
		ts := nowSeconds()
		st.Timestamp = &ts
	}
	if t.exec != nil && t.exec.ck != nil {
		t.exec.ck.update(t, st, fromExecutor) // before it is acted on
	}
	t.state, t.status = st.GetState(), st
	t.pending = append(t.pending, pendingUpdate{status: st, fromExecutor: fromExecutor})
	if len(t.pending) == 1 {
		t.backoff = m.updateRetry
		m.forwardUpdate(t)
	}
	if isTerminal(t.state) && !t.released {
		m.releaseTask(t)
		m.allocate()
	}
}

// forwardUpdate sends the oldest pending update to the framework and arms
// its retry timer.
func (m *master) forwardUpdate(t *task) {
	t.stopRetry()
	if len(t.pending) == 0 {
		return
	}
	head := t.pending[0].status
	t.fw.send(&scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: head}})
	t.retry = time.AfterFunc(t.backoff, func() {
		m.lock.Lock()
		defer m.lock.Unlock()
		if len(t.pending) > 0 && bytes.Equal(t.pending[0].status.UUID, head.UUID) && t.fw.tasks[t.info.TaskID.Value] == t {
			t.backoff = nextBackoff(t.backoff)
			m.forwardUpdate(t)
		}
	})
}

// resendUpdates re-forwards every task's oldest pending update, on
// (re-)subscription of the framework.
func (m *master) resendUpdates(fw *framework) {
	for _, t := range sortedTasks(fw.tasks) {
		if len(t.pending) > 0 {
			t.backoff = m.updateRetry
			m.forwardUpdate(t)
		}
	}
}

// agentUpdate generates a reliable update from the agent itself.
func (m *master) agentUpdate(t *task, state mesos.TaskState, reason mesos.TaskStatus_Reason, msg string) {
	m.agentUpdateAt(t, state, reason, msg, time.Time{})
}

// agentUpdateAt is agentUpdate dated at (now when zero): a task that ended
// while the agent was away is dated when it ended, not when the agent
// found out.
func (m *master) agentUpdateAt(t *task, state mesos.TaskState, reason mesos.TaskStatus_Reason, msg string, at time.Time) {
	st := mesos.TaskStatus{
		TaskID:  t.info.TaskID,
		State:   state.Enum(),
		Message: &msg,
		Source:  mesos.SOURCE_AGENT.Enum(),
		Reason:  reason.Enum(),
		UUID:    uuidBytes(),
	}
	if !at.IsZero() {
		ts := float64(at.UnixNano()) / 1e9
		st.Timestamp = &ts
	}
	m.statusUpdate(t, st, false)
}

// masterUpdate sends an unreliable update (no uuid, nothing to acknowledge)
// the way a Mesos master reports invalid tasks and reconciliation; a
// non-nil agent is named in it.
func (m *master) masterUpdate(fw *framework, taskID string, state mesos.TaskState, reason mesos.TaskStatus_Reason, msg string, a *agent) {
	ts := nowSeconds()
	st := mesos.TaskStatus{
		TaskID:    mesos.TaskID{Value: taskID},
		State:     state.Enum(),
		Source:    mesos.SOURCE_MASTER.Enum(),
		Reason:    reason.Enum(),
		Timestamp: &ts,
	}
	if msg != "" {
		st.Message = &msg
	}
	if a != nil {
		st.AgentID = &mesos.AgentID{Value: a.id}
	}
	fw.send(&scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: st}})
}

// acknowledge applies a framework's ACKNOWLEDGE: the oldest pending update
// of the task is done, the executor hears ACKNOWLEDGED and the next update
// is forwarded; a task whose terminal update is acknowledged is removed.
func (m *master) acknowledge(fw *framework, ack *scheduler.Call_Acknowledge) *httpError {
	if ack == nil {
		return errorf(http.StatusBadRequest, "Expecting 'acknowledge' to be present")
	}
	if len(ack.UUID) != 16 {
		return errorf(http.StatusBadRequest, "Failed to parse UUID: expecting 16 bytes, got %d", len(ack.UUID))
	}
	t := fw.tasks[ack.TaskID.Value]
	if t == nil || t.exec == nil || ack.AgentID.Value != t.exec.agent.id {
		m.log.Debug("acknowledgement for unknown task dropped", "task_id", ack.TaskID.Value)
		return nil
	}
	if !acceptsAck(t.pending, ack.UUID) {
		m.log.Debug("unexpected status update acknowledgement", "task_id", ack.TaskID.Value)
		return nil
	}
	head := t.pending[0]
	if t.exec.ck != nil {
		t.exec.ck.record(t, record{Ack: ack.UUID})
	}
	t.pending = t.pending[1:]
	if t.acked == nil {
		t.acked = map[string]bool{}
	}
	t.acked[string(ack.UUID)] = true
	t.stopRetry()
	if head.fromExecutor && t.exec != nil {
		t.exec.send(acknowledged(t, ack.UUID))
	}
	if len(t.pending) > 0 {
		t.backoff = m.updateRetry
		m.forwardUpdate(t)
	} else if isTerminal(t.state) {
		m.removeTask(t)
	}
	return nil
}

func acknowledged(t *task, uuid []byte) *execpb.Event {
	return &execpb.Event{Type: execpb.Event_ACKNOWLEDGED, Acknowledged: &execpb.Event_Acknowledged{
		TaskID: t.info.TaskID, UUID: uuid,
	}}
}

func (m *master) removeTask(t *task) {
	t.stopRetry()
	t.closeRecords()
	delete(t.fw.tasks, t.info.TaskID.Value)
	if e := t.exec; e != nil {
		delete(e.tasks, t.info.TaskID.Value)
		t.info.Data = nil // /state does not show it; it can be large
		e.finished = append(e.finished, t)
		if keep := finishedKept(e.agent.sim); len(e.finished) > keep {
			e.finished = e.finished[len(e.finished)-keep:]
		}
		if e.ck != nil {
			e.ck.removed(t)
		}
	}
}

func nowSeconds() float64 {
	return float64(time.Now().UnixNano()) / 1e9
}

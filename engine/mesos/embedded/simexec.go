package embedded

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
)

// simExec is a simulated executor: the connection the agent pushes the
// executor's events to (as it pushes them onto a real executor's
// SUBSCRIBE stream). It reacts to them by scheduling its answers on the
// simulator; the answers go through executorCall, the path of a real
// executor's UPDATE calls. All its state is guarded by the cluster mutex
// (push is called, and actions run, with it held).
type simExec struct {
	s      *simulator
	c      *Cluster
	e      *executor
	token  string              // its token, sent with its updates as a real executor's
	tasks  map[string]*simTask // tasks not yet terminal with every update acknowledged
	closed bool
	idle   time.Time // when it last had no task (zero while it has some)
}

type simTask struct {
	id      mesos.TaskID
	state   mesos.TaskState
	unacked int // updates sent and not yet acknowledged
	started time.Time
	data    []byte // TaskInfo.data, for SimConfig.Record
}

// simReport mirrors executor.Report, the data the real executor attaches
// to TASK_RUNNING and terminal updates.
type simReport struct {
	Hostname     string     `json:"hostname"`
	IP           string     `json:"ip"`
	StartTime    *time.Time `json:"startTime,omitempty"`
	CompleteTime *time.Time `json:"completeTime,omitempty"`
	ExitCode     *int       `json:"exitCode,omitempty"`
}

// launch starts a simulated executor: it subscribes at once unless it was
// shut down first.
func (s *simulator) launch(e *executor, token string) {
	s.after(0, func() {
		c := s.c
		switch e.state {
		case execTerminated:
		case execTerminating:
			c.executorTerminated(e, nil, "Failed to launch container: executor was shut down before it started")
		default:
			x := &simExec{s: s, c: c, e: e, token: token, tasks: map[string]*simTask{}}
			c.executorSubscribed(e, x, &execpb.Call_Subscribe{})
		}
	})
}

// push receives an event from the agent.
func (x *simExec) push(m message) bool {
	ev, ok := m.(*execpb.Event)
	if !ok || x.closed {
		return false
	}
	switch ev.Type {
	case execpb.Event_LAUNCH:
		x.launch(ev.GetLaunch().Task)
	case execpb.Event_LAUNCH_GROUP:
		for _, t := range ev.GetLaunchGroup().TaskGroup.Tasks {
			x.launch(t)
		}
	case execpb.Event_KILL:
		id := ev.GetKill().TaskID
		x.s.after(0, func() { x.end(id.Value, mesos.TASK_KILLED, nil) })
	case execpb.Event_ACKNOWLEDGED:
		x.acked(ev.GetAcknowledged().TaskID.Value)
	case execpb.Event_SHUTDOWN:
		x.s.after(0, x.shutdown)
	}
	return true
}

func (x *simExec) close() { x.closed = true }

// launch answers LAUNCH: TASK_RUNNING now (as the real executor does for
// a task it starts at once: it sends TASK_STARTING only for one slow to
// start), the terminal update after the drawn duration.
func (x *simExec) launch(info mesos.TaskInfo) {
	id := info.TaskID.Value
	if x.tasks[id] != nil {
		return // a duplicate LAUNCH, as the real executor ignores it
	}
	t := &simTask{id: info.TaskID, data: info.Data}
	x.tasks[id] = t
	x.idle = time.Time{}
	d, fail := x.s.duration(), x.s.fails()
	x.s.after(0, func() {
		if x.closed || isTerminal(t.state) || !t.started.IsZero() {
			return
		}
		t.started = x.s.clk.Now()
		x.update(t, mesos.TASK_RUNNING, &simReport{Hostname: x.e.agent.hostname, IP: "127.0.0.1", StartTime: &t.started})
	})
	state, code := mesos.TASK_FINISHED, 0
	if fail {
		state, code = mesos.TASK_FAILED, 1
	}
	x.s.after(d, func() { x.end(id, state, &code) })
}

// end sends a task's terminal update unless it has one already.
func (x *simExec) end(id string, state mesos.TaskState, code *int) {
	t := x.tasks[id]
	if x.closed || t == nil || isTerminal(t.state) {
		return
	}
	now := x.s.clk.Now()
	r := &simReport{Hostname: x.e.agent.hostname, IP: "127.0.0.1", CompleteTime: &now, ExitCode: code}
	if !t.started.IsZero() {
		r.StartTime = &t.started
	}
	x.update(t, state, r)
}

// update sends one status update through the agent's executor API path.
func (x *simExec) update(t *simTask, state mesos.TaskState, r *simReport) {
	ts := nowSeconds()
	st := mesos.TaskStatus{TaskID: t.id, State: state.Enum(), Source: mesos.SOURCE_EXECUTOR.Enum(),
		ExecutorID: &mesos.ExecutorID{Value: x.e.id}, UUID: uuidBytes(), Timestamp: &ts}
	if r != nil {
		st.Data, _ = json.Marshal(r) // plain data: cannot fail
	}
	if state == mesos.TASK_FAILED {
		st.Message = strPtr("simulated task failure (simulated cluster's fail ratio)")
	}
	call := execpb.Call{Type: execpb.Call_UPDATE, FrameworkID: mesos.FrameworkID{Value: x.e.fw.id},
		ExecutorID: mesos.ExecutorID{Value: x.e.id}, Update: &execpb.Call_Update{Status: st}}
	if herr := x.c.executorCall(x.e.agent, &call, x.token); herr != nil {
		x.c.log.Warn("simulated executor update refused", "executor_id", x.e.id, "task_id", t.id.Value, "err", herr.msg)
		return
	}
	t.state = state
	t.unacked++
	if rec := x.s.cfg.Record; rec != nil && (state == mesos.TASK_RUNNING || isTerminal(state)) {
		rec(SimEvent{Start: state == mesos.TASK_RUNNING, TaskID: t.id.Value, State: state.String(), At: x.s.clk.Now(), Data: t.data})
	}
}

// acked counts an acknowledgement; a terminal task with every update
// acknowledged is forgotten, and an executor left without tasks exits
// after the idle timeout.
func (x *simExec) acked(id string) {
	t := x.tasks[id]
	if t == nil {
		return
	}
	t.unacked--
	if t.unacked > 0 || !isTerminal(t.state) {
		return
	}
	delete(x.tasks, id)
	if len(x.tasks) > 0 {
		return
	}
	x.idle = x.s.clk.Now()
	since := x.idle
	x.s.after(x.s.cfg.ExecutorIdle, func() {
		if !x.closed && len(x.tasks) == 0 && x.idle.Equal(since) {
			x.exit()
		}
	})
}

// shutdown answers SHUTDOWN: every live task is killed, then the executor
// exits.
func (x *simExec) shutdown() {
	if x.closed {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(x.tasks)) {
		x.end(id, mesos.TASK_KILLED, nil)
	}
	x.exit()
}

// exit ends the executor as its process would, exiting with status 0.
func (x *simExec) exit() {
	status := int32(0)
	x.c.executorTerminated(x.e, &status, "Executor terminated: exited with status 0")
}

package embedded

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

type execState int

const (
	execLaunching   execState = iota // process starting or started, not subscribed
	execRunning                      // subscribed at least once
	execTerminating                  // shutdown requested
	execTerminated
)

func (s execState) String() string {
	return [...]string{"LAUNCHING", "RUNNING", "TERMINATING", "TERMINATED"}[s]
}

// termGrace is how long SIGTERM gets before SIGKILL.
const termGrace = 3 * time.Second

// maxCompleted bounds the terminated executors kept per framework for /state.
const maxCompleted = 50

// executor is one custom executor process of a framework on this agent.
type executor struct {
	fw          *framework
	agent       *agent
	id          string
	info        mesos.ExecutorInfo
	containerID string
	dir         string
	resources   mesos.Resources
	released    bool
	state       execState
	stream      executorConn // current executor connection, nil if none
	pid         int
	uid         int              // the tenant's user it runs as; 0: this process's
	nsGroup     string           // its tenant's group below the agent's (nsgroups.go); "": none
	tasks       map[string]*task // tasks not yet removed, queued or launched
	queued      []batch          // waiting for SUBSCRIBE, in launch order
	// killsDue are KILLs of its launched tasks that came while it had no connection (a
	// recovered executor before it subscribes again): sent once it subscribes, as a Mesos
	// agent does, so a kill the scheduler sends once is not lost to the agent's restart.
	killsDue    []string
	finished    []*task // completed tasks, for /state
	timers      []*time.Timer
	reason      mesos.TaskStatus_Reason
	exitStatus  *int32
	exitMessage string
	limitation  string                    // why the agent killed it for a limit (diskwatch.go): its end's message
	cgroup      *cgroups.Group            // its container; nil when not isolated
	taskGroups  map[string]*cgroups.Group // its live tasks' groups, by task id (taskgroups.go)
	token       tokenHash                 // SHA-256 of its token: its calls' credential (auth.go)
	ended       time.Time                 // when it terminated (Config.Clock)
	// exited: its process has ended and is reaped, or about to be: its pid
	// may name another process (signalGroup).
	exited bool
	// containerGone: its container is being destroyed (set under the
	// cluster's lock first): no task group may be made in it any more, as
	// making one recreates the container's directory the destroy removes.
	containerGone bool
	// messagesDropped: its last message was dropped (maxQueuedForMessages), logged once a run of drops.
	messagesDropped bool
	// termState is the state its live tasks end in when it terminates
	// (TASK_FAILED, or LOST/GONE when it did not re-register in time).
	termState mesos.TaskState
	done      chan struct{} // closed once its end has been handled

	persisted
}

// persisted is an executor's part in checkpointing and recovery
// (checkpoint.go, recover.go): meta is its checkpoint directory and ck
// the checkpoint ("" and nil when its framework does not checkpoint);
// proc the process checkpointed; recovered marks an executor an earlier
// run of the agent started, resubscribed that it has subscribed since;
// unwatch stops watching a recovered process; detached that the agent
// stopped and left it running; tasksDir that its tasks' directory was made
// (with its first checkpointed task).
type persisted struct {
	meta         string
	ck           *checkpoint
	tasksDir     bool
	proc         forked
	recovered    bool
	resubscribed bool
	unwatch      func()
	detached     bool
}

// executorConn is an executor's connection: the event stream of a real
// executor's SUBSCRIBE, or a simulated executor (sim.go).
type executorConn interface {
	push(m message) bool // queue an event; false when closed
	close()
}

// launchExecutor records a new executor and starts its process in the
// background (the runtime's: a simulated agent starts a simulated
// executor). Its
// resources are charged at once.
func (c *Cluster) launchExecutor(fw *framework, a *agent, info mesos.ExecutorInfo) *executor {
	info.FrameworkID = &mesos.FrameworkID{Value: fw.id}
	e := &executor{
		fw:          fw,
		agent:       a,
		id:          info.ExecutorID.Value,
		info:        info,
		containerID: newUUID(),
		resources:   normalize(info.Resources),
		tasks:       map[string]*task{},
		reason:      mesos.REASON_EXECUTOR_TERMINATED,
		termState:   mesos.TASK_FAILED,
		done:        make(chan struct{}),
	}
	e.dir = c.sandboxDir(a, fw.id, e.id, e.containerID)
	tok, hash := newExecutorToken()
	e.token = hash // before register, which indexes it
	c.register(e)
	c.rt.launch(e, tok)
	return e
}

// sandboxDir is an executor run's sandbox.
func (h *host) sandboxDir(a *agent, fwID, execID, containerID string) string {
	return filepath.Join(h.sandboxRoot(), a.id, "frameworks", fwID,
		"executors", execID, "runs", containerID)
}

// register makes a new or recovered executor live: known to its framework
// and agent, its resources charged.
func (c *Cluster) register(e *executor) {
	e.fw.executors[keyOf(e)] = e
	c.live[e.dir] = e
	c.countLive(e, 1)
	e.agent.live[e] = true
	c.charge(e.agent, e.resources)
}

func (h *host) after(e *executor, d time.Duration, f func()) {
	e.timers = append(e.timers, time.AfterFunc(d, func() {
		h.lock.Lock()
		defer h.lock.Unlock()
		if e.state != execTerminated {
			f()
		}
	}))
}

func (e *executor) send(ev *execpb.Event) bool {
	if e.stream == nil {
		return false
	}
	return e.stream.push(ev)
}

func (e *executor) sendMessage(data []byte) {
	e.send(&execpb.Event{Type: execpb.Event_MESSAGE, Message: &execpb.Event_Message{Data: data}})
}

func (e *executor) gracePeriod(def time.Duration) time.Duration {
	if g := e.info.GetShutdownGracePeriod(); g != nil && g.Nanoseconds > 0 {
		return time.Duration(g.Nanoseconds)
	}
	return def
}

// shutdownExecutor asks the executor to shut down (SHUTDOWN event), then
// escalates to SIGTERM and SIGKILL of its process group.
func (h *host) shutdownExecutor(e *executor) {
	if e.state == execTerminating || e.state == execTerminated {
		return
	}
	e.state = execTerminating
	h.log.Info("shutting down executor", "framework_id", e.fw.id, "executor_id", e.id)
	if e.send(&execpb.Event{Type: execpb.Event_SHUTDOWN}) {
		h.after(e, e.gracePeriod(h.cfg.ExecutorShutdownGrace), func() { h.terminate(e) })
		return
	}
	h.terminate(e)
}

// terminate sends SIGTERM to the process group and SIGKILL after termGrace.
func (h *host) terminate(e *executor) {
	if e.pid == 0 {
		return // not started yet; runExecutor notices execTerminating
	}
	e.signalGroup(syscall.SIGTERM)
	h.after(e, termGrace, func() { e.signalGroup(syscall.SIGKILL) })
}

// executorTerminated handles the end of an executor process: its live tasks
// fail, the framework gets FAILURE, resources are released and re-offered.
func (c *Cluster) executorTerminated(e *executor, status *int32, msg string) {
	c.executorEnded(e, status, msg, c.cfg.Clock.Now())
}

// executorEnded is executorTerminated for an executor that ended at the
// given time (earlier than now when it ended while the agent was away).
func (c *Cluster) executorEnded(e *executor, status *int32, msg string, at time.Time) {
	if e.state == execTerminated {
		return
	}
	e.state = execTerminated
	e.ended = at
	delete(c.live, e.dir)
	c.countLive(e, -1)
	e.exitStatus, e.exitMessage = status, msg
	e.disconnect()
	e.released = true
	delete(e.agent.live, e)
	c.uncharge(e.agent, e.resources)
	fw := e.fw
	if fw.executors[keyOf(e)] == e {
		delete(fw.executors, keyOf(e))
	}
	fw.completed = append(fw.completed, e)
	if len(fw.completed) > maxCompleted {
		c.archive(fw.completed[0])
		fw.completed = fw.completed[1:]
	}
	c.log.Info("executor terminated", "framework_id", fw.id, "executor_id", e.id, "message", msg)
	if c.frameworks[fw.id] == fw {
		for _, t := range e.liveTasks() {
			c.agentUpdateAt(t, e.termState, e.reason, msg, laterOf(at, statusTime(t.status)))
		}
		fw.send(&scheduler.Event{Type: scheduler.Event_FAILURE, Failure: &scheduler.Event_Failure{
			AgentID:    &mesos.AgentID{Value: e.agent.id},
			ExecutorID: &mesos.ExecutorID{Value: e.id},
			Status:     status,
		}})
	}
	if e.ck != nil {
		e.ck.completed(e)
	}
	e.queued = nil
	if e.done != nil {
		close(e.done)
	}
	c.cleanedUp()
	c.allocate()
}

// statusTime is when a status was sent (zero without a timestamp).
func statusTime(st mesos.TaskStatus) time.Time {
	if st.Timestamp == nil {
		return time.Time{}
	}
	return time.Unix(0, int64(*st.Timestamp*1e9))
}

// laterOf is the later of two times: a task ends no earlier than its last
// update.
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// disconnect stops the executor's timers and the watch of its process and
// closes its connection.
func (e *executor) disconnect() {
	for _, t := range e.timers {
		t.Stop()
	}
	if e.unwatch != nil {
		e.unwatch()
	}
	if e.stream != nil {
		e.stream.close()
		e.stream = nil
	}
}

// liveTasks are the executor's tasks that have not reached a terminal state,
// in a stable order (queued first, then by id).
func (e *executor) liveTasks() []*task {
	var out []*task
	for _, t := range sortedTasks(e.tasks) {
		if !isTerminal(t.state) {
			out = append(out, t)
		}
	}
	return out
}

func exitMessage(ws syscall.WaitStatus, err error) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("Executor terminated: exited with status %d", ws.ExitStatus())
	case ws.Signaled():
		return fmt.Sprintf("Executor terminated: killed by signal %s", ws.Signal())
	case err != nil:
		return fmt.Sprintf("Executor terminated: %v", err)
	}
	return "Executor terminated"
}

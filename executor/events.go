package executor

import (
	"context"
	"errors"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"

	"github.com/ejcloud/elasticjob/executor/process"
)

// handle applies one event. An error ends the session (re-subscribe).
func (e *Executor) handle(ev *executor.Event) error {
	if body := missingBody(ev); body != "" {
		e.log.Warn("event without its body ignored", "type", ev.Type.String(), "missing", body)
		return nil
	}
	switch ev.Type {
	case executor.Event_SUBSCRIBED:
		agent := ev.GetSubscribed().GetAgentInfo()
		e.log.Info("subscribed", "agent", agent.GetHostname())
	case executor.Event_LAUNCH:
		e.launch(ev.GetLaunch().Task)
	case executor.Event_LAUNCH_GROUP:
		for _, t := range ev.GetLaunchGroup().TaskGroup.Tasks {
			e.update(t.TaskID.Value, mesos.TASK_FAILED, "task groups are not supported by the ElasticJob executor")
		}
	case executor.Event_KILL:
		e.kill(ev.GetKill().TaskID.Value, ev.GetKill().KillPolicy)
	case executor.Event_ACKNOWLEDGED:
		e.ack(ev.GetAcknowledged().TaskID.Value, ev.GetAcknowledged().UUID)
	case executor.Event_MESSAGE:
		e.log.Info("message from the framework ignored", "bytes", len(ev.GetMessage().GetData()))
	case executor.Event_SHUTDOWN:
		e.beginShutdown("SHUTDOWN from the agent", true)
	case executor.Event_ERROR:
		return errors.New("agent sent ERROR: " + ev.GetError().GetMessage())
	case executor.Event_HEARTBEAT:
	default:
		e.log.Warn("unknown event ignored", "type", ev.Type.String())
	}
	return nil
}

// missingBody names the body an event of its type must carry and lacks
// ("" when present or not needed): a stream that says LAUNCH without a task
// is ignored rather than crashing the executor.
func missingBody(ev *executor.Event) string {
	switch {
	case ev.Type == executor.Event_LAUNCH && ev.Launch == nil:
		return "launch"
	case ev.Type == executor.Event_LAUNCH_GROUP && ev.LaunchGroup == nil:
		return "launch_group"
	case ev.Type == executor.Event_KILL && ev.Kill == nil:
		return "kill"
	case ev.Type == executor.Event_ACKNOWLEDGED && ev.Acknowledged == nil:
		return "acknowledged"
	}
	return ""
}

// launch runs the task in its own goroutine (one task's failure never
// touches another) and sends TASK_STARTING if it has not started within
// Options.StartingAfter.
func (e *Executor) launch(info mesos.TaskInfo) {
	id := info.TaskID.Value
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shutdown {
		// The task never began: the reason tells the scheduler it may run it again.
		e.updateStatusLocked(id, mesos.TASK_FAILED, "executor is shutting down", nil, mesos.REASON_EXECUTOR_TERMINATED.Enum())
		return
	}
	if _, dup := e.tasks[id]; dup {
		e.log.Warn("duplicate LAUNCH ignored", "task", id)
		return
	}
	if e.opt.Refuse != "" {
		e.log.Error("task refused", "task", id, "why", e.opt.Refuse)
		e.updateStatusLocked(id, mesos.TASK_FAILED, e.opt.Refuse, nil, nil)
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	t := &task{info: info, cancel: cancel, launched: time.Now()}
	e.tasks[id] = t
	e.ranAny = true
	e.unackedTasks[id] = info
	if e.opt.StartingAfter < 0 {
		e.startingLocked(id, t)
	} else {
		t.starting = time.AfterFunc(e.opt.StartingAfter, func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.startingLocked(id, t)
		})
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer cancel(nil)
		out := e.runner.Run(ctx, id, info.Data, Hooks{Running: func() { e.running(id) }, Forking: func() { e.forking(id) }, Message: e.message,
			Resources: taskResources(info.Resources)})
		e.finish(id, out)
	}()
}

// startingLocked sends TASK_STARTING for a task that is still being
// prepared: not yet reported running, not ended.
func (e *Executor) startingLocked(id string, t *task) {
	if e.tasks[id] != t || t.reported {
		return
	}
	t.reported = true
	e.updateLocked(id, mesos.TASK_STARTING, "")
}

var terminal = map[State]mesos.TaskState{Finished: mesos.TASK_FINISHED, Failed: mesos.TASK_FAILED, Killed: mesos.TASK_KILLED}

// forking records when the task's process began to start.
func (e *Executor) forking(id string) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if t := e.tasks[id]; t != nil && t.forking.IsZero() {
		t.forking = now
	}
}

// running records the start time and sends TASK_RUNNING with a Report
// (with the LAUNCH and fork times: the launch-path stages).
func (e *Executor) running(id string) {
	now := time.Now()
	e.log.Info("task running", "task", id) // also a sign of life the agent reads after a restart
	e.mu.Lock()
	defer e.mu.Unlock()
	r := Report{Hostname: e.hostname, IP: e.ip, StartTime: &now}
	if t := e.tasks[id]; t != nil {
		t.started = now
		t.reported = true
		if t.starting != nil {
			t.starting.Stop()
		}
		r.LaunchTime = &t.launched
		if !t.forking.IsZero() {
			r.ForkTime = &t.forking
		}
	}
	e.updateDataLocked(id, mesos.TASK_RUNNING, "", r.marshal())
}

// finish queues the terminal update (with a Report) and forgets the task,
// atomically, so done() never sees the task gone before its update is
// queued.
func (e *Executor) finish(id string, out Outcome) {
	e.log.Info("task ended", "task", id, "state", out.State.String(), "message", out.Message)
	now := time.Now()
	e.mu.Lock()
	r := Report{Hostname: e.hostname, IP: e.ip, CompleteTime: &now, ExitCode: out.ExitCode, Outputs: out.Outputs}
	if t := e.tasks[id]; t != nil {
		if !t.started.IsZero() {
			r.StartTime = &t.started
		}
		if t.starting != nil {
			t.starting.Stop()
		}
	}
	e.updateDataLocked(id, terminal[out.State], out.Message, r.marshal())
	delete(e.tasks, id)
	e.mu.Unlock()
	e.notify()
}

// kill kills a task with, in order of preference, the KILL event's grace
// period, the task's kill policy, or the executor's default.
func (e *Executor) kill(id string, policy *mesos.KillPolicy) {
	e.mu.Lock()
	t := e.tasks[id]
	e.mu.Unlock()
	if t == nil {
		e.log.Warn("KILL for a task not running here", "task", id)
		return
	}
	grace := e.opt.KillGrace
	if d, ok := gracePeriod(t.info.KillPolicy); ok {
		grace = d
	}
	if d, ok := gracePeriod(policy); ok {
		grace = d
	}
	e.log.Info("killing task", "task", id, "grace", grace)
	t.cancel(process.Kill{Grace: grace})
}

func gracePeriod(p *mesos.KillPolicy) (time.Duration, bool) {
	if p == nil || p.GracePeriod == nil {
		return 0, false
	}
	return time.Duration(p.GracePeriod.Nanoseconds), true
}

// beginShutdown kills every task, leaving a margin of the agent's shutdown
// grace period to report them. byAgent: the agent asked us to stop (see
// done).
func (e *Executor) beginShutdown(why string, byAgent bool) {
	grace := min(e.opt.KillGrace, e.opt.ShutdownGrace*3/4)
	e.mu.Lock()
	if !e.shutdown {
		e.log.Info("shutting down", "why", why, "tasks", len(e.tasks), "grace", grace)
	}
	e.shutdown = true
	e.agentStop = e.agentStop || byAgent
	for _, t := range e.tasks {
		t.cancel(process.Kill{Grace: grace})
	}
	e.mu.Unlock()
	e.notify()
}

// taskResources sums a task's cpus and mem scalars.
func taskResources(rs []mesos.Resource) Resources {
	var r Resources
	for _, res := range rs {
		switch res.Name {
		case "cpus":
			r.CPUs += res.GetScalar().GetValue()
		case "mem":
			r.MemMB += res.GetScalar().GetValue()
		}
	}
	return r
}

package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/executor/calls"

	"github.com/ejcloud/elasticjob/clock"
)

// Options configure an Executor. Zero durations take the defaults below.
type Options struct {
	FrameworkID, ExecutorID string
	KillGrace               time.Duration // task kill grace (5s)
	ShutdownGrace           time.Duration // MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD (5s)
	RecoveryTimeout         time.Duration // give up after this long without the agent (15m)
	BackoffMin, BackoffMax  time.Duration // re-subscription backoff (100ms .. 2s)
	AckTimeout              time.Duration // wait this long for the last acks before exiting (10s)
	// IdleTimeout ends the executor after it has run no task for this long
	// (counted from its last task's final acknowledgement, and only once it
	// has run a task), so a transient app's resources go back to the
	// cluster. Negative: never; zero: as soon as the last task is done.
	IdleTimeout time.Duration
	// StartingAfter: TASK_STARTING is sent only for a task that has not
	// started (TASK_RUNNING) within this long, e.g. while its app is
	// fetched; a task that starts at once goes from STAGING to RUNNING and
	// saves the scheduler an update. Zero: 100ms; negative: always, at once.
	StartingAfter time.Duration
	// Refuse, when set, fails every task with it as the message, before
	// anything of the task runs (a tenant's executor that is not
	// confined, see ConfinedEnv).
	Refuse string
	Log    *slog.Logger
	// Clock times the recovery timeout and the re-subscription backoff
	// (default the system clock).
	Clock clock.Clock
}

// Executor is the Mesos side: it subscribes to the agent, turns LAUNCH and
// KILL into Runner calls and reports status updates until SHUTDOWN.
type Executor struct {
	opt    Options
	agent  Agent
	runner Runner
	log    *slog.Logger

	mu           sync.Mutex
	tasks        map[string]*task
	unackedTasks map[string]mesos.TaskInfo
	unacked      []executor.Call_Update // sent or queued, oldest first
	accepted     map[string]bool        // uuids of unacked updates the agent accepted (202)
	outbox       []outgoing             // queued for sending
	shutdown     bool
	agentStop    bool      // the agent (SHUTDOWN) or its signal ended us: do not wait for acks
	drainBy      time.Time // exit even with unacked updates after this
	ranAny       bool      // a task was launched: the idle timer may run
	idleSince    time.Time // when the executor last became idle

	hostname, ip string // reported in status data (Report)

	wake    chan struct{} // state changed: re-check whether to exit
	outbox1 chan struct{} // outbox not empty
	// undelivered: an update the agent did not take (sendLoop): the session ends and the
	// next SUBSCRIBE carries it, as it carries every unacknowledged update.
	undelivered chan struct{}
	wg          sync.WaitGroup
}

type task struct {
	info     mesos.TaskInfo
	cancel   context.CancelCauseFunc
	launched time.Time // when the LAUNCH arrived
	forking  time.Time // when the process began to start (zero: none yet, or not a process)
	started  time.Time // when the process started (zero before)
	reported bool      // TASK_STARTING or TASK_RUNNING has been sent
	starting *time.Timer
}

// New makes an Executor; Run starts it.
func New(agent Agent, runner Runner, opt Options) *Executor {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opt.KillGrace, 5*time.Second)
	def(&opt.ShutdownGrace, 5*time.Second)
	def(&opt.RecoveryTimeout, 15*time.Minute)
	def(&opt.BackoffMin, 100*time.Millisecond)
	def(&opt.BackoffMax, 2*time.Second)
	def(&opt.AckTimeout, 10*time.Second)
	if opt.StartingAfter == 0 {
		opt.StartingAfter = 100 * time.Millisecond
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Clock == nil {
		opt.Clock = clock.Real{}
	}
	host, ip := hostIdentity()
	return &Executor{
		opt: opt, agent: agent, runner: runner, log: opt.Log, hostname: host, ip: ip,
		tasks: map[string]*task{}, unackedTasks: map[string]mesos.TaskInfo{}, accepted: map[string]bool{},
		wake: make(chan struct{}, 1), outbox1: make(chan struct{}, 1), undelivered: make(chan struct{}, 1),
	}
}

// errUndelivered ends a session whose agent did not take an update.
var errUndelivered = errors.New("an update was not delivered: subscribing again with it")

// ErrAgentGone is returned when the agent stayed unreachable for the
// recovery timeout; the executor's tasks have been killed.
var ErrAgentGone = errors.New("executor: agent unreachable")

// Run serves until SHUTDOWN (nil), until ctx ends (tasks are killed and
// their final updates delivered if possible; ctx.Err()), or until the agent
// is gone for the recovery timeout (ErrAgentGone).
func (e *Executor) Run(ctx context.Context) error {
	agentCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go e.sendLoop(agentCtx)
	go func() {
		select {
		case <-ctx.Done():
			e.beginShutdown("executor stopped", true)
		case <-agentCtx.Done():
		}
	}()
	clk := e.opt.Clock
	lost, backoff := clk.Now(), e.opt.BackoffMin
	for {
		connected, err := e.session(agentCtx)
		if e.done() {
			e.wg.Wait()
			e.log.Info("executor exiting", "unacked", e.unackedCount())
			return ctx.Err()
		}
		if connected {
			lost, backoff = clk.Now(), e.opt.BackoffMin
			e.log.Warn("disconnected from agent; tasks keep running while it is away", "tasks", e.taskCount(),
				"recovery_timeout", e.opt.RecoveryTimeout, "err", err)
		} else {
			e.log.Warn("agent unreachable", "away_for", clk.Now().Sub(lost).Round(time.Millisecond), "err", err)
		}
		if clk.Now().Sub(lost) >= e.opt.RecoveryTimeout {
			e.log.Error("agent unreachable for the recovery timeout: killing the tasks and exiting", "recovery_timeout", e.opt.RecoveryTimeout)
			e.beginShutdown("agent gone", false)
			e.wg.Wait()
			return fmt.Errorf("%w for %v", ErrAgentGone, e.opt.RecoveryTimeout)
		}
		e.pause(backoff)
		backoff = min(2*backoff, e.opt.BackoffMax)
	}
}

// pause waits d or until the state changes (e.g. the last task ended).
func (e *Executor) pause(d time.Duration) {
	t := e.opt.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-e.wake:
	}
}

func (e *Executor) taskCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.tasks)
}

// session subscribes and handles events until the stream ends or it is time
// to exit. connected says whether the subscription was accepted.
func (e *Executor) session(ctx context.Context) (connected bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.mu.Lock()
	sub := calls.Subscribe(mapValues(e.unackedTasks), append([]executor.Call_Update(nil), e.unacked...))
	select {
	case <-e.undelivered: // what failed before now is in sub
	default:
	}
	e.mu.Unlock()
	stream, err := e.agent.Subscribe(ctx, sub)
	if err != nil {
		return false, err
	}
	defer stream.Close()
	evc := make(chan *executor.Event)
	errc := make(chan error, 1)
	go func() {
		for {
			ev := new(executor.Event)
			if err := stream.Decode(ev); err != nil {
				errc <- err
				return
			}
			select {
			case evc <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		if e.done() {
			return true, nil
		}
		select {
		case ev := <-evc:
			if err := e.handle(ev); err != nil {
				return true, err
			}
		case err := <-errc:
			return true, err
		case <-e.undelivered:
			// The stream may outlive the agent that took it (an agent restarted between
			// this SUBSCRIBE and the update): only a new SUBSCRIBE delivers the update.
			return true, errUndelivered
		case <-e.wake:
		}
	}
}

// done reports whether the executor may exit: shutting down, no task left,
// and every update acknowledged or the wait for them over. When the agent
// asked us to stop (SHUTDOWN, or its signal), acknowledgements may never
// come (the scheduler is often stopping too) and the agent has but a grace
// period before it kills us: we exit as soon as the agent has accepted
// (202) every final update, which it then forwards itself, or after
// min(AckTimeout, ShutdownGrace/2).
func (e *Executor) done() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.checkIdle()
	if !e.shutdown || len(e.tasks) > 0 {
		return false
	}
	if e.drainBy.IsZero() {
		wait := e.opt.AckTimeout
		if e.agentStop {
			wait = min(wait, e.opt.ShutdownGrace/2)
		}
		e.drainBy = time.Now().Add(wait)
		time.AfterFunc(wait, e.notify)
	}
	if len(e.unacked) == 0 || !time.Now().Before(e.drainBy) {
		return true
	}
	return e.agentStop && e.allAcceptedLocked()
}

// checkIdle starts the executor's shutdown once it has been idle (no task,
// nothing unacknowledged) for IdleTimeout. Called with e.mu held.
func (e *Executor) checkIdle() {
	idle := e.ranAny && !e.shutdown && len(e.tasks) == 0 && len(e.unacked) == 0 && len(e.unackedTasks) == 0
	if !idle || e.opt.IdleTimeout < 0 {
		e.idleSince = time.Time{}
		return
	}
	now := time.Now()
	if e.idleSince.IsZero() {
		e.idleSince = now
		time.AfterFunc(e.opt.IdleTimeout, e.notify)
	}
	if now.Sub(e.idleSince) >= e.opt.IdleTimeout {
		e.log.Info("idle: exiting to release the executor's resources", "idle_for", now.Sub(e.idleSince))
		e.shutdown = true
	}
}

func (e *Executor) notify() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Executor) unackedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.unacked)
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

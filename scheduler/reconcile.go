package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// reconciler keeps the registry's running tasks and the engine's in
// agreement: after every (re)subscription it asks for the state of every
// running task and holds back the launches of those tasks' jobs until
// each is answered (or Options.ReconcileWait passed), so no job's next
// execution or failover shard is launched beside a task the engine has
// not confirmed; work of every other job launches at once (an answer can
// only end a recorded task, never add one: it decides nothing about a job
// with nothing recorded as running), so a takeover's first launch does not
// wait for thousands of answers; then it asks for every task the
// engine knows (implicit), which surfaces tasks the registry does not
// know (killed as orphans). It reconciles again every Options.Reconcile,
// and counts a task unreachable for longer than Options.Unreachable as
// lost.
type reconciler struct {
	reg    *registry.Registry
	driver engine.Driver
	clock  clock.Clock
	log    *slog.Logger
	opts   *Options
	st     *state
	status *statusHandler
	wake   func()
	alarm  *alarm // wakes the loop for the next ask (again)
	// async runs the subscription's reconciliation calls off the loop
	// (ask); post hands their failure back to it.
	async func(f func())
	post  func(ctx context.Context, f func(ctx context.Context))
}

// subscribed reconciles every task, and persists the framework id when
// the registry does not hold it yet. The reconciliation's questions go
// first: a takeover's registry write, a quorum commit on a replicated
// registry, is not on the path to its first launch.
//
// The subscription may inherit what the framework's last subscription left
// with the engine (a previous term's SUPPRESS, its decline filters of up
// to RefuseIdle): it REVIVEs (clearing them) instead of waiting for offers
// they hold back (up to a second at a busy takeover), since its first
// round waits for offers (Scheduler.roundHeld); if the REVIVE fails, the
// loop counts itself suppressed and its first round with work REVIVEs.
//
// Its first round that can launch comes before the updates queued behind
// the subscription (st.firstLaunch: takeInbox, Scheduler.turn), whether or
// not tasks are recorded as running.
func (r *reconciler) subscribed(ctx context.Context, frameworkID string) {
	r.st.subscribed, r.st.suppressed, r.st.firstLaunch = true, true, true
	r.st.everSubscribed, r.st.subscribedAt = true, r.clock.Now()
	if err := r.driver.Revive(ctx); err != nil {
		r.log.Warn("revive after subscribing", "err", err)
	} else {
		r.st.suppressed, r.st.filtersUntil = false, time.Time{}
	}
	r.begin(ctx)
	r.ask(ctx, nil, false)
	if frameworkID == r.st.frameworkID {
		return // the registry holds it (read at the term's start, or written by this term)
	}
	if err := r.reg.Term().SetFrameworkID(ctx, frameworkID); err != nil {
		r.log.Error("persist framework id", "err", err)
		return
	}
	r.st.frameworkID = frameworkID
}

// reconcile asks the engine for task states: explicit lists every running
// task the registry holds; implicit asks for every task the engine knows.
func (r *reconciler) reconcile(ctx context.Context, explicit bool) error {
	var refs []engine.TaskRef
	if explicit {
		all, err := r.st.runningAll(ctx, r.reg)
		if err != nil {
			return err
		}
		for _, items := range all {
			for _, rt := range items {
				if r.st.accepting[rt.TaskID] == nil { // its ACCEPT's answer settles it
					refs = append(refs, engine.TaskRef{TaskID: rt.TaskID, AgentID: rt.AgentID})
				}
			}
		}
		refs = r.retiringRefs(ctx, refs)
		if len(refs) == 0 {
			return nil // an empty explicit list would be an implicit reconcile
		}
	}
	if err := r.driver.Reconcile(ctx, refs); err != nil {
		r.log.Warn("reconcile", "explicit", explicit, "tasks", len(refs), "err", err)
		return err
	}
	return nil
}

// begin asks for the state of every task the registry holds as running
// and holds back the launches of their jobs until each has been answered.
func (r *reconciler) begin(ctx context.Context) {
	r.st.awaiting = map[string]bool{}
	r.st.asked++
	r.st.reconciledAt = r.clock.Now() // the periodic one counts its interval from here
	all, err := r.st.runningAll(ctx, r.reg)
	if err != nil {
		r.log.Warn("reconcile: read running tasks", "err", err)
		return
	}
	for _, items := range all {
		for _, rt := range items {
			if r.st.accepting[rt.TaskID] == nil { // its ACCEPT's answer settles it
				r.st.awaiting[rt.TaskID] = true
			}
		}
	}
	if len(r.st.awaiting) == 0 {
		if refs := r.retiringRefs(ctx, nil); len(refs) > 0 {
			r.ask(ctx, refs, false) // their answers hold no launch back
		}
		return
	}
	r.st.awaitFrom = r.clock.Now()
	r.st.awaitUntil = r.st.awaitFrom.Add(r.opts.ReconcileWait)
	r.st.awaitGap = reconcileRetry
	r.st.awaitRetry = r.st.awaitFrom.Add(r.st.awaitGap)
	r.alarm.set(r.st.awaitRetry)
	r.st.firstLaunch = true
	r.log.Info("reconciling running tasks before launching", "tasks", len(r.st.awaiting), "wait", r.opts.ReconcileWait)
	refs := make([]engine.TaskRef, 0, len(r.st.awaiting))
	for _, items := range all {
		for _, rt := range items {
			if r.st.awaiting[rt.TaskID] {
				refs = append(refs, engine.TaskRef{TaskID: rt.TaskID, AgentID: rt.AgentID})
			}
		}
	}
	r.ask(ctx, r.retiringRefs(ctx, refs), true)
}

// retiringRefs adds the retiring tasks (overlap.go) to an explicit reconciliation: a new
// term learns whether each still runs (and kills it once its replacement runs), and an
// engine of several clusters knows them as tasks on their cluster, reported unreachable
// while it is lost. Launching does not wait for their answers: their shards' running
// entries are their replacements'.
func (r *reconciler) retiringRefs(ctx context.Context, refs []engine.TaskRef) []engine.TaskRef {
	retiring, err := r.st.retiringAll(ctx, r.reg)
	if err != nil {
		r.log.Warn("reconcile: read retiring tasks", "err", err)
		return refs
	}
	for _, items := range retiring {
		for _, rt := range items {
			refs = append(refs, engine.TaskRef{TaskID: rt.TaskID, AgentID: rt.AgentID})
		}
	}
	return refs
}

// ask sends the subscription's reconciliation (refs; explicit, or
// implicit: every task the engine knows) off the loop: the engine's
// master queues an answer for each task before it replies (3,270 tasks,
// two calls: 0.6 s of the loop at a takeover, before its first launch
// round). The answers come on the event stream as ever. An explicit one
// that fails ends the wait for its answers (launching goes on), as when it
// was sent from the loop, unless a later subscription's began since.
func (r *reconciler) ask(ctx context.Context, refs []engine.TaskRef, explicit bool) {
	asked := r.st.asked
	r.async(func() {
		err := r.driver.Reconcile(ctx, refs)
		if err == nil {
			return
		}
		r.log.Warn("reconcile", "explicit", explicit, "tasks", len(refs), "err", err)
		if explicit {
			r.post(ctx, func(context.Context) {
				if r.st.asked == asked {
					r.st.awaiting = nil
				}
			})
		}
	})
}

// reconcileRetry is how long after asking for the running tasks' states
// the tasks not answered yet are asked for again, doubling up to
// reconcileRetryMax while launching waits for them. Mesos answers nothing
// for a task on an agent it knows but that has not registered again (a
// master that failed over, its registry in the replicated log, drops the
// question); once the agent is back, the next ask is answered, so
// launching resumes within a few seconds instead of at ReconcileWait's
// end (real Mesos 1.11 soak: fires 10-21 s late after each master
// restart). Mesos's reconciliation guide asks frameworks to retry so.
const (
	reconcileRetry    = time.Second
	reconcileRetryMax = 4 * time.Second
)

// again asks Mesos once more for the running tasks whose answer is still
// missing, when the retry is due and launching still waits for them; it
// is called on every turn of the loop and sets the alarm for the next.
func (r *reconciler) again(ctx context.Context) {
	if len(r.st.awaiting) == 0 || r.st.awaitRetry.IsZero() {
		return
	}
	now := r.clock.Now()
	if !now.Before(r.st.awaitUntil) {
		return
	}
	if now.Before(r.st.awaitRetry) {
		r.alarm.set(r.st.awaitRetry)
		return
	}
	r.st.awaitGap = min(2*r.st.awaitGap, reconcileRetryMax)
	r.st.awaitRetry = now.Add(r.st.awaitGap)
	r.alarm.set(r.st.awaitRetry)
	all, err := r.st.runningAll(ctx, r.reg)
	if err != nil {
		r.log.Warn("reconcile: read running tasks", "err", err)
		return
	}
	var refs []engine.TaskRef
	for _, items := range all {
		for _, rt := range items {
			if r.st.awaiting[rt.TaskID] {
				refs = append(refs, engine.TaskRef{TaskID: rt.TaskID, AgentID: rt.AgentID})
			}
		}
	}
	if len(refs) == 0 {
		return
	}
	r.log.Info("reconcile: asking again for the tasks not answered yet", "tasks", len(refs), "next", r.st.awaitGap)
	if err := r.driver.Reconcile(ctx, refs); err != nil {
		r.log.Warn("reconcile", "explicit", true, "tasks", len(refs), "err", err)
	}
}

// answered notes an answer for a task being reconciled.
func (r *reconciler) answered(taskID string) {
	if !r.st.awaiting[taskID] {
		return
	}
	delete(r.st.awaiting, taskID)
	if len(r.st.awaiting) == 0 {
		r.log.Info("every running task reconciled; launching")
		r.st.roundNow = true
		r.wake()
	}
}

// periodic runs the timed chores: explicit reconciliation once every
// Options.Reconcile (the loop ticks at least once a minute, so a shorter
// tick must not reconcile more often), forgetting old trigger keys, and
// giving up on tasks unreachable for too long (they count as lost).
func (r *reconciler) periodic(ctx context.Context) {
	now := r.clock.Now()
	if r.st.subscribed && r.opts.Reconcile > 0 && !now.Before(r.st.reconciledAt.Add(r.opts.Reconcile)) {
		r.st.reconciledAt = now
		_ = r.reconcile(ctx, true)
	}
	if err := r.reg.Work().PruneTriggerKeys(ctx, now.Add(-TriggerKeyLifetime)); err != nil {
		r.log.Warn("prune trigger idempotency keys", "err", err)
	}
	if err := r.reg.Config().PruneGates(ctx, now, now.Add(-registry.GateLifetime)); err != nil {
		r.log.Warn("prune deregistered jobs' gates", "err", err)
	}
	for taskID, since := range r.st.unreachable {
		bound := r.opts.Unreachable
		if b, ok := r.opts.ClusterLostAfter[r.st.lostCluster[taskID]]; ok && b > 0 {
			bound = b
		}
		if now.Sub(since) < bound {
			continue
		}
		delete(r.st.unreachable, taskID)
		cluster := r.st.lostCluster[taskID]
		delete(r.st.lostCluster, taskID)
		tid, err := jobs.ParseTaskID(taskID)
		if err != nil {
			continue
		}
		msg := "unreachable for longer than " + bound.String()
		if cluster != "" {
			msg = "cluster " + cluster + " unreachable for longer than " + bound.String()
		}
		r.log.Warn("task unreachable for too long: counting it as lost", "task", taskID, "cluster", cluster, "bound", bound)
		_ = killTask(ctx, r.st, r.driver, taskID, tid.AgentID)
		if err := r.status.handleOne(ctx, r.reg, engine.Status{TaskID: taskID, AgentID: tid.AgentID, State: task.Lost,
			Message: msg}); err != nil && ctx.Err() == nil {
			r.log.Warn("count an unreachable task lost; trying again at the next tick", "task", taskID, "err", err)
			r.st.unreachable[taskID] = since
			if cluster != "" {
				r.st.lostCluster[taskID] = cluster
			}
		}
	}
}

// TriggerKeyLifetime is how long a trigger's idempotency key is remembered.
const TriggerKeyLifetime = 24 * time.Hour

package scheduler

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos"
)

// reconcile asks the master for task states: explicit lists every running
// task the registry holds; implicit asks for every task the master knows,
// which surfaces tasks the registry lost (they are killed as orphans).
func (s *Scheduler) reconcile(ctx context.Context, explicit bool) error {
	var refs []mesos.TaskRef
	if explicit {
		all, err := s.runningAll(ctx)
		if err != nil {
			return err
		}
		for _, items := range all {
			for _, rt := range items {
				refs = append(refs, mesos.TaskRef{TaskID: rt.TaskID, AgentID: rt.AgentID})
			}
		}
		if len(refs) == 0 {
			return nil // an empty explicit list would be an implicit reconcile
		}
	}
	if err := s.Driver.Reconcile(ctx, refs); err != nil {
		s.Log.Warn("reconcile", "explicit", explicit, "tasks", len(refs), "err", err)
		return err
	}
	return nil
}

// periodic runs the timed chores: explicit reconciliation once every
// Options.Reconcile (the loop ticks at least once a minute, so a shorter
// tick must not reconcile more often), and giving up on tasks unreachable
// for too long (they count as lost).
func (s *Scheduler) periodic(ctx context.Context) {
	now := s.Clock.Now()
	if s.subscribed && s.Options.Reconcile > 0 && !now.Before(s.reconciledAt.Add(s.Options.Reconcile)) {
		s.reconciledAt = now
		_ = s.reconcile(ctx, true)
	}
	if err := s.Registry.PruneTriggerKeys(ctx, now.Add(-TriggerKeyLifetime)); err != nil {
		s.Log.Warn("prune trigger idempotency keys", "err", err)
	}
	for taskID, since := range s.unreachable {
		if now.Sub(since) < s.Options.Unreachable {
			continue
		}
		delete(s.unreachable, taskID)
		tid, err := jobs.ParseTaskID(taskID)
		if err != nil {
			continue
		}
		s.Log.Warn("task unreachable for too long: counting it as lost", "task", taskID)
		_ = s.Driver.Kill(ctx, taskID, tid.AgentID)
		running, err := s.runningOf(ctx, tid.JobName)
		if err != nil {
			continue
		}
		if rt, ok := running[tid.Item]; ok && rt.TaskID == taskID {
			_ = s.onStatus(ctx, mesos.Status{TaskID: taskID, AgentID: tid.AgentID, State: "TASK_LOST",
				Message: "unreachable for longer than " + s.Options.Unreachable.String()})
		}
	}
}

// beginReconcile asks for the state of every task the registry holds as
// running and holds back launching until each has been answered (or
// Options.ReconcileWait passed): after a restart or a leader change,
// nothing is launched on a view of the cluster that Mesos has not
// confirmed.
func (s *Scheduler) beginReconcile(ctx context.Context) {
	s.awaiting = map[string]bool{}
	s.reconciledAt = s.Clock.Now() // the periodic one counts its interval from here
	all, err := s.runningAll(ctx)
	if err != nil {
		s.Log.Warn("reconcile: read running tasks", "err", err)
		return
	}
	for _, items := range all {
		for _, rt := range items {
			s.awaiting[rt.TaskID] = true
		}
	}
	if len(s.awaiting) == 0 {
		return
	}
	s.awaitUntil = s.Clock.Now().Add(s.Options.ReconcileWait)
	s.Log.Info("reconciling running tasks before launching", "tasks", len(s.awaiting), "wait", s.Options.ReconcileWait)
	if err := s.reconcile(ctx, true); err != nil {
		s.awaiting = nil
	}
}

// reconciling reports whether launching is held back for answers still
// missing; after the wait it gives up on them with a warning.
func (s *Scheduler) reconciling() bool {
	if len(s.awaiting) == 0 {
		return false
	}
	if now := s.Clock.Now(); now.Before(s.awaitUntil) {
		s.wakeAt(s.awaitUntil)
		return true
	}
	s.Log.Warn("reconcile: no answer for some running tasks; launching anyway (they stay recorded as running)",
		"tasks", len(s.awaiting), "wait", s.Options.ReconcileWait)
	s.awaiting = nil
	return false
}

// reconciled notes an answer for a task being reconciled.
func (s *Scheduler) reconciled(taskID string) {
	if !s.awaiting[taskID] {
		return
	}
	delete(s.awaiting, taskID)
	if len(s.awaiting) == 0 {
		s.Log.Info("every running task reconciled; launching")
		s.Wake()
	}
}

// TriggerKeyLifetime is how long a trigger's idempotency key is remembered.
const TriggerKeyLifetime = 24 * time.Hour

// Reconcile runs a reconciliation on the loop (for the API).
func (s *Scheduler) Reconcile(ctx context.Context, explicit bool) error {
	return s.call(ctx, func(ctx context.Context) error { return s.reconcile(ctx, explicit) })
}

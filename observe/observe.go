// Package observe holds what the leader's loops tell their observers:
// the scheduler's task events (launches, status changes, DAEMON runs)
// that history, the webhooks and the metrics record, and its loop gauges
// (fires, ready depth, offers, waiting work) that only the metrics show;
// the deadline watcher's missed deadlines (DeadlineAlert, the owner's
// Hook) and start estimates' errors. It sits below the scheduler and
// package deadline so that history and metrics import neither loop.
package observe

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// TaskEvent describes one task.
type TaskEvent struct {
	TaskID, Job, App, AgentID, Hostname string
	Item                                int
	Source                              string
	Trigger                             string // who or what queued the run (task.Entry.Trigger)
	Transient                           bool
	At                                  time.Time
	Queued                              time.Time // when the work entered the ready or failover queue
	// Nominal is the cron instant the execution serves (task.Entry.Nominal;
	// zero: none recorded, a run no cron instant queued).
	Nominal time.Time
	// Late, for work launched more than scheduler.LateAfter after it was
	// due (a cron fire's instant, a trigger's time), says how late and why
	// it waited, in the words of its last recorded wait; its status trace
	// keeps it (the job's history).
	Late string
}

// Tasks hears what happens to tasks. Calls are made on the scheduler's
// loop goroutine and must not block.
type Tasks interface {
	Launched(t TaskEvent)
	StatusChanged(t TaskEvent, st engine.Status)
}

// Durable is implemented by task observers whose records must survive a
// crash of the process once the update they describe is acknowledged
// (history): Sync returns once everything recorded before the call is on
// disk. The scheduler calls it on its loop after handling a batch of status
// updates and before committing them, so an update is committed, and then
// acknowledged, only once its history is durable; an error leaves the
// batch uncommitted and unacknowledged (the engine resends it).
type Durable interface {
	Sync(ctx context.Context) error
}

// Daemons is implemented by task observers that record DAEMON runs (a
// DAEMON task's executor reports each run of its cron).
type Daemons interface {
	DaemonRun(ev TaskEvent, rep jobs.DaemonReport)
}

// Gauges hears the scheduler loop's figures. Calls are made on the loop
// goroutine and must not block.
type Gauges interface {
	Fired(job string, scheduled, committed time.Time)
	ReadyDepth(n int)
	OffersSeen(n int, declined int)
}

// ClusterOffers is implemented by gauges that export what is on offer per cluster
// (called once per launch round, with the offers the round started from; the cluster ""
// is the one engine's, or the home cluster's).
type ClusterOffers interface {
	OffersHeld(cpus, memMB map[string]float64)
}

// Rounds is implemented by gauges that follow the launch rounds (called once per
// round, on the loop, after the round is carried out).
type Rounds interface {
	Round(r Round)
}

// StatusBatches is implemented by gauges that follow how the loop commits status updates
// (called on the loop once per batch: the updates a turn took, handled and committed
// together).
type StatusBatches interface {
	StatusBatch(updates int, took time.Duration)
}

// Round is what one launch round did and where its time on the loop went (wall clock).
type Round struct {
	// Clusters is how many clusters the round could place on: those with offers in its
	// view (a cluster whose ACCEPTs are in flight has none there); 0: no offer.
	Clusters int
	Tasks    int // tasks it launched (committed and sent to the engine)
	Running  int // tasks running in its view (launches in flight included)
	// View reads the queues, the running tasks and the capacities; Decide is
	// round.Begin; Commit records the launches in the registry; Accept is what the
	// loop waited for ACCEPTs (0 for those sent off the loop); Other is the rest
	// (the wait reasons, declines, the removal of stale entries).
	View, Decide, Commit, Accept, Other time.Duration
}

// Waiting is implemented by gauges that count waiting work by reason
// (called at most once per launch round).
type Waiting interface {
	Waiting(byReason map[string]int)
}

// Notifier sends failure notifications (the WEBHOOK error handler). Notify
// must not block: implementations queue and send in the background.
type Notifier interface {
	Notify(job jobs.Config, ev TaskEvent, st engine.Status)
}

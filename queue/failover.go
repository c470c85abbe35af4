package queue

import (
	"cmp"
	"time"
)

// Failover is a failed shard waiting to run again.
type Failover struct {
	Job      string    `json:"-"`
	Item     int       `json:"-"`
	TaskID   string    `json:"taskId"` // the failed task
	Since    time.Time `json:"since"`
	Attempts int       `json:"attempts,omitempty"`
	// NotBefore delays a retry (retry backoff); zero means at once.
	NotBefore time.Time `json:"notBefore,omitzero"`
	Parameter *string   `json:"jobParameterOverride,omitempty"`
	RunKey    string    `json:"runKey,omitempty"`
	// ScheduledAt is the failed task's nominal instant (a backfill's run).
	ScheduledAt time.Time `json:"scheduledAt,omitzero"`
	// Nominal is the cron instant the failed task's run served (zero:
	// none recorded; Ready.Nominal).
	Nominal time.Time `json:"nominalAt,omitzero"`
	// Retry marks a retry within the failed shard's run (maxRetries, or a
	// task that never started), as opposed to a failover relaunch.
	Retry bool `json:"retry,omitempty"`
	// Relaunch is the task id of a launch of this entry that was rolled
	// back (its ACCEPT failed): launched again, it takes that id back
	// (Ready.Relaunch says why).
	Relaunch string `json:"relaunch,omitempty"`
	Version  int64  `json:"-"`
}

// CompareFailover orders entries oldest first, then by job and shard: a
// total order (one entry per shard).
func CompareFailover(a, b *Failover) int {
	return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Job, b.Job), cmp.Compare(a.Item, b.Item))
}

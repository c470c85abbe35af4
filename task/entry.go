package task

import "time"

// Entry is a launched task as the registry records it at
// /state/running/{jobName}/{jobName}@-@{item} while it runs.
type Entry struct {
	TaskID     string `json:"taskId"`
	AgentID    string `json:"agentId"`
	Hostname   string `json:"hostname,omitempty"`
	ExecutorID string `json:"executorId"`
	State      State  `json:"state"` // the last state seen
	// StagingWhenLost: the task went UNREACHABLE while still STAGING (its
	// agent was lost before the task reported starting), so it may or may
	// not have started there; any later state but UNREACHABLE clears it.
	StagingWhenLost bool   `json:"stagingWhenLost,omitempty"`
	Busy            bool   `json:"busy,omitempty"` // a DAEMON task is inside a run of its cron
	Source          string `json:"executionSource,omitempty"`
	// Trigger is who or what queued the run: "cron", "api:{user}",
	// "console:{user}", "ejctl:{user}", "workflow:{flow}/{run}/{node}",
	// "retry", "failover", "daemon" ("" when not recorded).
	Trigger string `json:"triggeredBy,omitempty"`
	// KilledBy is who stopped the run this task belongs to (the API's
	// kill of one execution: "console:{user}", …); its end says so.
	KilledBy string `json:"killedBy,omitempty"`
	Attempts int    `json:"attempts,omitempty"` // earlier launches of this shard's run that failed
	// Parameter is the run's jobParameter override (from a trigger), kept
	// so a failover or retry of the shard runs with it too.
	Parameter *string `json:"jobParameterOverride,omitempty"`
	// RunKey is the idempotency key of the trigger that queued the run,
	// kept so the trigger's record follows its shards.
	RunKey string `json:"runKey,omitempty"`
	// ScheduledAt is the nominal instant a backfill's run stands for (a
	// job's, or a workflow node's), kept so a retry of the shard gets it too.
	ScheduledAt time.Time `json:"scheduledAt,omitzero"`
	// Nominal is the cron instant the run serves (zero: none recorded;
	// queue.Ready.Nominal), kept so a failover or retry of the shard
	// carries it too.
	Nominal time.Time `json:"nominalAt,omitzero"`
	// Gang names the launch of an execution too large for one registry
	// commit, which the launcher records over several: the entry counts
	// only once the launch's last commit wrote the job's gang mark with
	// the same name (an entry of a launch that never completed is
	// removed, never launched).
	Gang       string    `json:"gang,omitempty"`
	LaunchedAt time.Time `json:"launchedAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Version    int64     `json:"-"`
}

package task

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// PausedBy marks a disable flag set by the scheduler itself.
const PausedBy = "pauseAfterFailures"

// RunState is a job's run record at /state/runs/{jobName}: the failed runs
// in a row (consecutiveFailedRuns) and how the current run goes. A run is
// one execution of a job: the shards launched together from one ready
// entry. It ends when no task of the job runs any more and none of its
// shards waits for a retry within the run; it failed when a shard failed
// for good (killed shards count neither way). For DAEMON jobs each run a
// shard reports counts.
type RunState struct {
	// Consecutive counts the failed runs in a row before the current one.
	Consecutive int `json:"consecutiveFailedRuns"`
	// Failed and Succeeded say whether a shard of the current run failed
	// for good or finished; Cause is the first failure's message.
	Failed       bool      `json:"currentRunFailed,omitempty"`
	Succeeded    bool      `json:"currentRunSucceeded,omitempty"`
	Cause        string    `json:"cause,omitempty"`
	LastFailedAt time.Time `json:"lastFailedAt,omitzero"`
	LastCause    string    `json:"lastCause,omitempty"`
}

// Pause is the value of a job's disable flag when pauseAfterFailures set
// it (a disable through the API holds only a time stamp).
type Pause struct {
	By         string    `json:"by"` // PausedBy
	At         time.Time `json:"at"`
	FailedRuns int       `json:"failedRuns"`
	Cause      string    `json:"cause,omitempty"` // the last failed run's first failure
	Reason     string    `json:"reason"`          // in words, for people
}

// Result is how one shard's task ended, for its run.
type Result string

const (
	Success  Result = "success"
	Failure  Result = "failed"
	Retrying Result = "retrying" // failed, and runs again within the run
	Stopped  Result = "killed"
)

// CountRun folds a shard's result into its job's run state; at the run's
// end it counts a failed run (or resets the count after a success).
// pauseAfter > 0 and a job that may still run (runnable) pause the job
// when the count reaches pauseAfter: the pause is returned and the count
// starts again. changed is false when nothing needs writing.
func CountRun(rs RunState, res Result, cause string, ended bool, pauseAfter int, runnable bool, now time.Time) (next RunState, pause *Pause, changed bool) {
	before := rs
	switch res {
	case Failure:
		if !rs.Failed {
			rs.Failed, rs.Cause = true, cause
		}
	case Success:
		// only a count to reset needs the flag: a job that never failed
		// writes nothing
		rs.Succeeded = rs.Consecutive > 0 || rs.Succeeded
	}
	if !ended {
		return rs, nil, rs != before
	}
	switch {
	case rs.Failed:
		rs.Consecutive++
		rs.LastFailedAt, rs.LastCause = now.UTC(), rs.Cause
	case rs.Succeeded:
		rs.Consecutive = 0
	}
	rs.Failed, rs.Succeeded, rs.Cause = false, false, ""
	if pauseAfter > 0 && rs.Consecutive >= pauseAfter && runnable {
		p := pauseOf(rs, now)
		rs.Consecutive = 0
		return rs, &p, true
	}
	return rs, nil, rs != before
}

func pauseOf(rs RunState, now time.Time) Pause {
	now = now.UTC()
	p := Pause{By: PausedBy, At: now, FailedRuns: rs.Consecutive, Cause: rs.LastCause,
		Reason: fmt.Sprintf("paused after %d failed %s in a row at %s", rs.Consecutive, plural(rs.Consecutive, "run", "runs"), now.Format(time.RFC3339))}
	if rs.LastCause != "" {
		p.Reason += "; last failure: " + truncate(rs.LastCause, 200)
	}
	return p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// RunRecord is what /state/trigger_keys/{key} holds: the trigger (jobName,
// at) and, once its run launched, how its shards ended. The leader writes
// each shard's end with the shard's state change, and Done with the last.
type RunRecord struct {
	JobName string    `json:"jobName"`
	At      time.Time `json:"at"`
	// Workflow names the workflow node the run is ("{workflow}/{runId}/{node}"):
	// such a record is not pruned by age; the workflow engine deletes it
	// once it has copied the outcome into the run.
	Workflow string `json:"workflow,omitempty"`
	// Inputs are handed to every shard of the run (a workflow node's
	// inputs; see jobs.Inputs).
	Inputs  jobs.Inputs    `json:"inputs,omitempty"`
	Shards  []ShardOutcome `json:"shards,omitempty"`
	Done    bool           `json:"done,omitempty"`
	Success bool           `json:"success,omitempty"`
	// Failed: a shard failed for good (not to be retried within the run),
	// so the run cannot succeed, though other shards may still run (or a
	// failover run the shard again outside the run).
	Failed  bool      `json:"failed,omitempty"`
	EndedAt time.Time `json:"endedAt,omitzero"`
}

// ShardOutcome is how one shard of a keyed run ended (its last attempt).
type ShardOutcome struct {
	Item    int    `json:"shardingItem"`
	TaskID  string `json:"taskId"`
	State   State  `json:"state"`
	Message string `json:"message,omitempty"`
	// StartedAt and EndedAt are when the shard's process started and
	// ended, as its executor reported them.
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Outputs are the key=value lines the shard wrote to $ELASTICJOB_OUTPUT.
	Outputs map[string]string `json:"outputs,omitempty"`
}

// RecordShard writes a shard's end into its keyed run's record, replacing
// an earlier attempt of the same shard; done says no shard of the run
// runs or waits to run again, so the run is over: Done is set, and
// Success when every shard's last attempt finished. An outcome without an
// end time ends at now.
func RecordShard(rec RunRecord, job string, so ShardOutcome, done bool, now time.Time) RunRecord {
	if rec.JobName == "" {
		rec.JobName = job
	}
	if so.EndedAt.IsZero() {
		so.EndedAt = now.UTC()
	}
	shards := make([]ShardOutcome, 0, len(rec.Shards)+1)
	replaced := false
	for _, sh := range rec.Shards {
		if sh.Item == so.Item {
			sh, replaced = so, true
		}
		shards = append(shards, sh)
	}
	if !replaced {
		shards = append(shards, so)
	}
	rec.Shards = shards
	if done && !rec.Done {
		rec.Done, rec.EndedAt, rec.Success = true, now.UTC(), true
		for _, sh := range rec.Shards {
			if sh.State != Finished {
				rec.Success = false
			}
		}
	}
	return rec
}

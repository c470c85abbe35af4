package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/store"
)

// RunsPath holds, per job, what the leader knows of its recent runs
// (/state/runs/{jobName}): the count of failed runs in a row that
// pauseAfterFailures compares with its limit. It lives in the registry so
// a new leader continues the count.
const RunsPath = "/state/runs"

// PausedBy marks a disable flag set by the scheduler itself.
const PausedBy = "pauseAfterFailures"

// RunState is a job's run record.
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

// RunStateOf reads a job's run record (zero when it has none).
func (r *Registry) RunStateOf(ctx context.Context, job string) (RunState, error) {
	var rs RunState
	n, err := r.kv.Get(ctx, RunsPath+"/"+job)
	if errors.Is(err, store.ErrNotFound) {
		return rs, nil
	}
	if err != nil {
		return rs, err
	}
	if err := json.Unmarshal(n.Value, &rs); err != nil {
		return rs, fmt.Errorf("registry: decode %s: %w", n.Path, err)
	}
	return rs, nil
}

// PutRunStateOp writes a job's run record.
func PutRunStateOp(job string, rs RunState) store.Op {
	return store.Put(RunsPath+"/"+job, mustJSON(rs))
}

// PauseOp disables a job, recording why.
func PauseOp(job string, p Pause) store.Op {
	return store.Put(DisabledJobPath+"/"+job, mustJSON(p))
}

// Pauses returns the disabled jobs whose flag pauseAfterFailures set, with
// why (other disabled jobs are absent).
func (r *Registry) Pauses(ctx context.Context) (map[string]Pause, error) {
	nodes, err := r.kv.List(ctx, DisabledJobPath)
	if err != nil {
		return nil, err
	}
	out := map[string]Pause{}
	for _, n := range nodes {
		if p, ok := decodePause(n.Value); ok {
			out[lastSegment(n.Path)] = p
		}
	}
	return out, nil
}

// PauseOf returns why a job was paused, if pauseAfterFailures disabled it.
func (r *Registry) PauseOf(ctx context.Context, job string) (Pause, bool, error) {
	n, err := r.kv.Get(ctx, DisabledJobPath+"/"+job)
	if errors.Is(err, store.ErrNotFound) {
		return Pause{}, false, nil
	}
	if err != nil {
		return Pause{}, false, err
	}
	p, ok := decodePause(n.Value)
	return p, ok, nil
}

func decodePause(b []byte) (Pause, bool) {
	var p Pause
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &p) != nil || p.By != PausedBy {
		return Pause{}, false
	}
	return p, true
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
	EndedAt time.Time      `json:"endedAt,omitzero"`
}

// ShardOutcome is how one shard of a keyed run ended (its last attempt).
type ShardOutcome struct {
	Item    int    `json:"shardingItem"`
	TaskID  string `json:"taskId"`
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
	// StartedAt and EndedAt are when the shard's process started and
	// ended, as its executor reported them.
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Outputs are the key=value lines the shard wrote to $ELASTICJOB_OUTPUT.
	Outputs map[string]string `json:"outputs,omitempty"`
}

// ErrRunNotFound is returned for an unknown idempotency key.
var ErrRunNotFound = errors.New("run not found")

// RunRecordOf reads a trigger's record.
func (r *Registry) RunRecordOf(ctx context.Context, key string) (RunRecord, error) {
	var rec RunRecord
	n, err := r.kv.Get(ctx, TriggerKeysPath+"/"+key)
	if errors.Is(err, store.ErrNotFound) {
		return rec, fmt.Errorf("%w: no trigger with idempotency key '%s' in the last 24 hours", ErrRunNotFound, key)
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(n.Value, &rec); err != nil {
		return rec, fmt.Errorf("registry: decode %s: %w", n.Path, err)
	}
	return rec, nil
}

// PutRunRecordOp writes a trigger's record.
func PutRunRecordOp(key string, rec RunRecord) store.Op {
	return store.Put(TriggerKeysPath+"/"+key, mustJSON(rec))
}

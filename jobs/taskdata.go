package jobs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/app"
)

// ExecutionSource says what caused a run; it is recorded in history.
type ExecutionSource string

const (
	SourceNormal   ExecutionSource = "NORMAL_TRIGGER"
	SourceMisfire  ExecutionSource = "MISFIRE"
	SourceFailover ExecutionSource = "FAILOVER"
)

// TaskDataVersion is the version of the TaskData payload format.
const TaskDataVersion = 1

// TaskData is the JSON payload of TaskInfo.data, everything the executor
// needs to run one shard. Documented in docs/jobs.md ("Task ids and the task payload").
type TaskData struct {
	Version         int             `json:"version"`
	ShardingContext ShardingContext `json:"shardingContext"`
	ExecutionSource ExecutionSource `json:"executionSource"`
	Job             Config          `json:"job"`
	App             app.Config      `json:"app"`
	// SecretAccess is set when the job names secrets of its namespace:
	// where and how the executor fetches them as the task starts (never
	// the values).
	SecretAccess *SecretAccess `json:"secretAccess,omitempty"`
	// Term is the fencing sequence of the leader term that launched the
	// task (absent: not recorded; the first term's is 0). Queued is when the execution
	// was queued: a cron fire's instant when it was committed by then (its
	// commit time when late), a trigger's time, the time the execution
	// before it launched for executions that waited behind it, the
	// failover's queueing time for a failover. Both are
	// for observers (the executor passes them to the job as
	// ELASTICJOB_LEADER_TERM and ELASTICJOB_QUEUED_AT; the fault soak's
	// checker reads them).
	Term   *int64    `json:"term,omitempty"`
	Queued time.Time `json:"queuedAt,omitzero"`
	// Nominal is the cron instant the execution serves (absent: not a
	// cron fire's or a catch-up's, or not recorded; a failover's is its
	// failed run's), also when the fire was committed or launched late;
	// for observers too (ELASTICJOB_NOMINAL_AT).
	Nominal time.Time `json:"nominalAt,omitzero"`
}

// Marshal encodes the payload.
func (d TaskData) Marshal() []byte {
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // only plain data types: cannot fail
	}
	return b
}

// UnmarshalTaskData decodes and checks a payload.
func UnmarshalTaskData(b []byte) (TaskData, error) {
	var d TaskData
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("jobs: task data is not valid JSON: %w", err)
	}
	return d, d.Check()
}

// Check reports a payload an executor could not run: another version, or no job or app.
func (d TaskData) Check() error {
	if d.Version != TaskDataVersion {
		return fmt.Errorf("jobs: task data version %d, this executor understands %d", d.Version, TaskDataVersion)
	}
	if d.ShardingContext.JobName == "" || d.App.AppName == "" {
		return fmt.Errorf("jobs: task data lacks the job or app")
	}
	return nil
}

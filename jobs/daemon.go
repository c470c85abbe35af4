package jobs

import (
	"encoding/json"
	"fmt"
	"time"
)

// Daemon run report types, sent by the executor as a Mesos MESSAGE around
// every run of a DAEMON task's cron.
const (
	DaemonBegin    = "DAEMON_BEGIN"
	DaemonComplete = "DAEMON_COMPLETE"
)

// DaemonReport is the MESSAGE payload (JSON) a daemon task's executor sends
// when a run begins and when it completes. The scheduler marks the task busy
// or idle and records the run in history (honouring the app's
// eventTraceSamplingCount).
type DaemonReport struct {
	Type            string          `json:"type"`
	TaskID          string          `json:"taskId"`
	RunID           string          `json:"runId"` // unique per run; BEGIN and COMPLETE share it
	ShardingItem    int             `json:"shardingItem"`
	ExecutionSource ExecutionSource `json:"executionSource"`
	Success         bool            `json:"success,omitempty"`
	Message         string          `json:"message,omitempty"` // failure cause on COMPLETE
	Hostname        string          `json:"hostname,omitempty"`
	IP              string          `json:"ip,omitempty"`
	StartTime       time.Time       `json:"startTime"`
	CompleteTime    time.Time       `json:"completeTime,omitzero"`
}

// Marshal encodes the report.
func (r DaemonReport) Marshal() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain data
	}
	return b
}

// ParseDaemonReport decodes and checks a report.
func ParseDaemonReport(b []byte) (DaemonReport, error) {
	var r DaemonReport
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("jobs: daemon report is not valid JSON: %w", err)
	}
	if r.Type != DaemonBegin && r.Type != DaemonComplete {
		return r, fmt.Errorf("jobs: daemon report type %q, want %s or %s", r.Type, DaemonBegin, DaemonComplete)
	}
	if _, err := ParseTaskID(r.TaskID); err != nil {
		return r, err
	}
	return r, nil
}

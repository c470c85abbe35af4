package scheduler

import (
	"encoding/json"
	"time"
)

// A run is one execution of a job: the shards launched together from one
// ready entry (task.RunState has the rules). Its bookkeeping — the job's
// failed runs in a row, which pauseAfterFailures compares with its limit,
// and the record of a keyed trigger's run — is committed with the state
// change of the task that moves it (status.go), so a new leader continues
// it.

// shardReport is what the scheduler reads of the executor's report on a
// terminal status (executor.Report): the process's times and the outputs
// it wrote to $ELASTICJOB_OUTPUT.
type shardReport struct {
	StartTime    time.Time         `json:"startTime"`
	CompleteTime time.Time         `json:"completeTime"`
	Outputs      map[string]string `json:"outputs"`
}

func shardReportOf(data []byte) shardReport {
	var r shardReport
	if len(data) > 0 && data[0] == '{' {
		_ = json.Unmarshal(data, &r) // a report we cannot read only loses its times and outputs
	}
	return r
}

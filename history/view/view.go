// Package view holds what the history API shows: the rows of the event
// trace tables and the statistics, with the original's JSON field names,
// and the search query. It has no SQL, so the api package can depend on it
// without depending on a database driver.
package view

import (
	"errors"
	"time"

	"github.com/ejcloud/elasticjob/task"
)

// ErrBadQuery marks a search or statistics request the caller got wrong (an
// unknown column, a malformed value). The API answers it with 400.
var ErrBadQuery = errors.New("history: bad query")

// Paging limits of the searches.
const (
	DefaultPerPage = 10
	MaxPerPage     = 1000
)

// Query is one search of an event table, as the original's
// JobEventRdbSearch.Condition: 1-based Page, PerPage rows, an optional Sort
// column and Order ("asc" or "desc"), a time range on start_time
// (executions) or creation_time (status traces), both ends inclusive, and
// equality Filters keyed by parameter name (camelCase or snake_case).
type Query struct {
	Page, PerPage int
	Sort, Order   string
	Start, End    time.Time // zero = unbounded
	Filters       map[string]string
	// Namespaces limits the rows to those of these namespaces (nil: every
	// namespace's; empty: none).
	Namespaces []string
}

// Page is a search result: the number of matching rows and one page of them.
type Page[T any] struct {
	Total int `json:"total"`
	Rows  []T `json:"rows"`
}

// Execution is a row of JOB_EXECUTION_LOG, named as the original's
// JobExecutionEvent (source is the execution_source column, success the
// is_success column; failureCause is the failure text).
type Execution struct {
	ID           string     `json:"id"`
	Hostname     string     `json:"hostname"`
	IP           string     `json:"ip"`
	TaskID       string     `json:"taskId"`
	JobName      string     `json:"jobName"`
	Source       string     `json:"source"`
	ShardingItem int        `json:"shardingItem"`
	StartTime    *time.Time `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
	Success      bool       `json:"success"`
	FailureCause *string    `json:"failureCause"`
	// Result is how it ended: SUCCEEDED, FAILED or KILLED (an operator's
	// kill, the job's deletion, a reschedule: success is false, and the
	// statistics count it as neither); null while it runs.
	Result *string `json:"result"`
	// TriggeredBy is who or what triggered the run (cron, api:{user},
	// console:{user}, ejctl:{user}, workflow:{flow}/{run}/{node}, retry,
	// failover, daemon; "" on rows from before it was recorded); Source
	// keeps the original's NORMAL_TRIGGER, MISFIRE and FAILOVER.
	TriggeredBy string `json:"triggeredBy"`
	// NominalAt is the cron instant the run served (the fire it was
	// queued for: a late, caught-up or replayed fire's own instant; null
	// for runs no cron instant queued and rows from before it was
	// recorded).
	NominalAt *time.Time `json:"nominalAt"`
	// DurationMs is how long the run took (completeTime − startTime; null
	// while it runs).
	DurationMs *int64 `json:"durationMs"`
}

// StatusTrace is a row of JOB_STATUS_TRACE_LOG, named as the original's
// JobStatusTraceEvent (shardingItems is the sharding_item column).
type StatusTrace struct {
	ID             string     `json:"id"`
	JobName        string     `json:"jobName"`
	OriginalTaskID string     `json:"originalTaskId"`
	TaskID         string     `json:"taskId"`
	SlaveID        string     `json:"slaveId"`
	Source         string     `json:"source"`
	ExecutionType  string     `json:"executionType"`
	ShardingItems  string     `json:"shardingItems"`
	State          task.State `json:"state"`
	Message        *string    `json:"message"`
	CreationTime   *time.Time `json:"creationTime"`
}

// Audit is a row of AUDIT_LOG: one write request to the REST API (also
// what the API hands its audit log to record). User is the authenticated
// user, "anonymous" (open access or no credentials), or for a login the
// user name tried; Role is admin, guest or "" (not authenticated); Route
// is the route pattern (/api/app/:appName); TargetKind and Target name the
// app, job or workflow written; Summary says what changed, never a secret;
// Status is the HTTP status answered.
type Audit struct {
	ID           string     `json:"id"`
	CreationTime *time.Time `json:"creationTime"`
	User         string     `json:"user"`
	Role         string     `json:"role"`
	Address      string     `json:"address"`
	Method       string     `json:"method"`
	Route        string     `json:"route"`
	TargetKind   string     `json:"targetKind"`
	Target       string     `json:"target"`
	Summary      string     `json:"summary"`
	Status       int        `json:"status"`
	Namespace    string     `json:"namespace"` // the request's namespace
}

// Interval is the width of a task-result statistic.
type Interval string

const (
	Minute Interval = "MINUTE"
	Hour   Interval = "HOUR"
	Day    Interval = "DAY"
)

// Step is the interval's length (a day is 24 h; day boundaries follow the
// collector's time zone).
func (i Interval) Step() time.Duration {
	switch i {
	case Minute:
		return time.Minute
	case Hour:
		return time.Hour
	}
	return 24 * time.Hour
}

// TaskResult is a row of TASK_RESULT_STATISTICS_{MINUTE|HOUR|DAY} or a sum
// of them, as the original's TaskResultStatistics. Gap-filled rows have id 0.
type TaskResult struct {
	ID                int64     `json:"id"`
	SuccessCount      int       `json:"successCount"`
	FailedCount       int       `json:"failedCount"`
	StatisticInterval Interval  `json:"statisticInterval"`
	StatisticsTime    time.Time `json:"statisticsTime"`
	CreationTime      time.Time `json:"creationTime"`
}

// Running is a row of TASK_RUNNING_STATISTICS or JOB_RUNNING_STATISTICS, as
// the original's TaskRunningStatistics and JobRunningStatistics.
type Running struct {
	ID             int64     `json:"id"`
	RunningCount   int       `json:"runningCount"`
	StatisticsTime time.Time `json:"statisticsTime"`
	CreationTime   time.Time `json:"creationTime"`
}

// Registered is a row of JOB_REGISTER_STATISTICS, as the original's
// JobRegisterStatistics.
type Registered struct {
	ID              int64     `json:"id"`
	RegisteredCount int       `json:"registeredCount"`
	StatisticsTime  time.Time `json:"statisticsTime"`
	CreationTime    time.Time `json:"creationTime"`
}

// JobExecutionType counts the registered jobs by execution type, as the
// original's JobExecutionTypeStatistics.
type JobExecutionType struct {
	TransientJobCount int `json:"transientJobCount"`
	DaemonJobCount    int `json:"daemonJobCount"`
}

// Since names a statistics window of the API (?since=… and /results/{period}).
type Since string

const (
	Last24Hours Since = "last24hours"
	LastWeek    Since = "lastWeek"
	LastHour    Since = "lastHour"
	LastMinute  Since = "lastMinute"
	Online      Since = "online"
)

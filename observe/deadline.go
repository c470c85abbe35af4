package observe

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// DeadlineKind is which deadline a run missed.
type DeadlineKind string

// Kinds of deadline (the metric's kind label).
const (
	DeadlineStart DeadlineKind = "start" // not started startDeadlineSeconds after its fire
	DeadlineRun   DeadlineKind = "run"   // still going runDeadlineSeconds after it started
	DeadlineRunAt DeadlineKind = "runAt" // still going at runDeadlineAt
)

// DeadlineAlert is a missed deadline, as the deadline watcher raises it.
type DeadlineAlert struct {
	Kind      DeadlineKind `json:"kind"`
	Namespace string       `json:"namespace"`
	Job       string       `json:"jobName"` // the job's name in its namespace
	Since     time.Time    `json:"since"`   // the fire (start) or the run's start
	Due       time.Time    `json:"due"`     // when the deadline passed
	TaskID    string       `json:"taskId,omitempty"`
	// Workflow and RunID name a workflow's run (Job is then empty).
	Workflow string `json:"workflow,omitempty"`
	RunID    string `json:"runId,omitempty"`
	Message  string `json:"message"`
}

// Key identifies the alert: the same missed deadline (the same job, kind
// and fire or start) always has the same key, whichever leader sees it.
func (a DeadlineAlert) Key() string {
	if a.Workflow != "" {
		return fmt.Sprintf("workflow/%s/%s/%s/%s", a.Kind, a.Namespace, a.Workflow, a.RunID)
	}
	return fmt.Sprintf("%s/%s/%s/%d", a.Kind, a.Namespace, a.Job, a.Since.UnixMilli())
}

// PathKey is Key hashed into a registry node name.
func (a DeadlineAlert) PathKey() string {
	h := sha1.Sum([]byte(a.Key()))
	return hex.EncodeToString(h[:12])
}

// Hook is where an alert's owner wants it sent: a job's
// props["webhook.url"] and props["webhook.format"], a workflow's
// webhookUrl and webhookFormat. URL "": nowhere.
type Hook struct {
	URL, Format string
	// Secret and Keyword are a DingTalk robot's (a job's props dingtalk.secret and
	// dingtalk.keyword, as the 3.x DingTalk handler named them): the post is signed, and
	// its text carries the keyword.
	Secret, Keyword string
}

// JobHook is a job's webhook.
func JobHook(c jobs.Config) Hook {
	return Hook{URL: c.Props["webhook.url"], Format: c.Props["webhook.format"],
		Secret: c.Props["dingtalk.secret"], Keyword: c.Props["dingtalk.keyword"]}
}

// Deadlines is told of each missed deadline once (across leaders): the
// history, the metric, the webhook. It must not block.
type Deadlines interface {
	DeadlineMissed(a DeadlineAlert, hook Hook)
}

// Estimates observes the error of a start estimate when the execution
// starts: |estimated − actual start|, and that over its wait.
type Estimates interface {
	StartEstimateError(namespace string, abs time.Duration, ratio float64)
}

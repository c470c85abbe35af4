package webhook

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/jobs"
)

var _ deadline.Sink = (*Sender)(nil)

// DeadlineNotification is the generic body of a missed deadline.
type DeadlineNotification struct {
	Event     string        `json:"event"` // "DEADLINE_MISSED"
	Kind      deadline.Kind `json:"kind"`  // start, run or runAt
	Namespace string        `json:"namespace"`
	JobName   string        `json:"jobName"`
	TaskID    string        `json:"taskId,omitempty"`
	Since     time.Time     `json:"since"`
	Due       time.Time     `json:"due"`
	Message   string        `json:"message"`
}

// DeadlineBody renders a missed deadline in a format.
func DeadlineBody(format string, a deadline.Alert) ([]byte, error) {
	n := DeadlineNotification{Event: "DEADLINE_MISSED", Kind: a.Kind, Namespace: a.Namespace, JobName: a.Job, TaskID: a.TaskID,
		Since: a.Since.UTC(), Due: a.Due.UTC(), Message: a.Message}
	text := fmt.Sprintf("[ElasticJob] deadline missed (%s): %s/%s: %s", a.Kind, a.Namespace, a.Job, a.Message)
	return textBody(format, text, n)
}

// DeadlineMissed queues a notification to the job's props["webhook.url"]
// (format props["webhook.format"]), when it has one, whatever its error
// handler (never blocks).
func (s *Sender) DeadlineMissed(a deadline.Alert, job jobs.Config) {
	url := job.Props["webhook.url"]
	if url == "" {
		return
	}
	body, err := DeadlineBody(job.Props["webhook.format"], a)
	if err != nil {
		s.Log.Warn("webhook: encode", "job", job.JobName, "err", err)
		return
	}
	s.enqueue(url, body, job.JobName)
}

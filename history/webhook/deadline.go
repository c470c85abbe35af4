package webhook

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/observe"
)

var _ observe.Deadlines = (*Sender)(nil)

// DeadlineNotification is the generic body of a missed deadline.
type DeadlineNotification struct {
	Event     string               `json:"event"` // "DEADLINE_MISSED"
	Kind      observe.DeadlineKind `json:"kind"`  // start, run or runAt
	Namespace string               `json:"namespace"`
	JobName   string               `json:"jobName,omitempty"`
	TaskID    string               `json:"taskId,omitempty"`
	Workflow  string               `json:"workflow,omitempty"` // a workflow run's alert: the workflow and
	RunID     string               `json:"runId,omitempty"`    // the run

	Since   time.Time `json:"since"`
	Due     time.Time `json:"due"`
	Message string    `json:"message"`
}

// DeadlineBody renders a missed deadline in a format.
func DeadlineBody(format string, a observe.DeadlineAlert) ([]byte, error) {
	return deadlineBody(format, a, Robot{})
}

func deadlineBody(format string, a observe.DeadlineAlert, r Robot) ([]byte, error) {
	n := DeadlineNotification{Event: "DEADLINE_MISSED", Kind: a.Kind, Namespace: a.Namespace, JobName: a.Job, TaskID: a.TaskID,
		Workflow: a.Workflow, RunID: a.RunID, Since: a.Since.UTC(), Due: a.Due.UTC(), Message: a.Message}
	who := a.Job
	if a.Workflow != "" {
		who = "workflow " + a.Workflow
	}
	text := fmt.Sprintf("[ElasticJob] deadline missed (%s): %s/%s: %s", a.Kind, a.Namespace, who, a.Message)
	return textBody(format, r.withKeyword(text), n)
}

// DeadlineMissed queues a notification to the alert's hook (a job's
// props["webhook.url"] whatever its error handler, a workflow's
// webhookUrl), when it has one (never blocks).
func (s *Sender) DeadlineMissed(a observe.DeadlineAlert, hook observe.Hook) {
	if hook.URL == "" {
		return
	}
	who := a.Job
	if a.Workflow != "" {
		who = "workflow " + a.Workflow
	}
	robot := Robot{}
	if hook.Format == "dingtalk" {
		robot = Robot{Secret: hook.Secret, Keyword: hook.Keyword}
	}
	body, err := deadlineBody(hook.Format, a, robot)
	if err != nil {
		s.Log.Warn("webhook: encode", "job", who, "err", err)
		return
	}
	s.enqueue(hook.URL, body, who, robot.Secret)
}

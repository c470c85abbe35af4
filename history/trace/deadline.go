package trace

import (
	"fmt"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/observe"
)

// StateDeadlineMissed is the state of a status trace recording a missed
// deadline (its message says which, observe.DeadlineKind first).
const StateDeadlineMissed = "DEADLINE_MISSED"

// Deadlines records missed deadlines as status traces (observe.Deadlines): one
// row per alert, its ID named by the alert's key, so an alert recorded
// twice is stored once.
type Deadlines struct{ W *Writer }

var _ observe.Deadlines = Deadlines{}

// DeadlineMissed records a.
func (d Deadlines) DeadlineMissed(a observe.DeadlineAlert, _ observe.Hook) {
	if a.Workflow != "" {
		return // a job's status trace; a workflow's run has its own history (its nodes' runs)
	}
	d.W.Record(DeadlineTrace(a))
}

// DeadlineTrace is the status trace of a missed deadline.
func DeadlineTrace(a observe.DeadlineAlert) StatusTrace {
	return StatusTrace{ID: NewID("deadline", a.Key()), JobName: namespace.Key(a.Namespace, a.Job), TaskID: a.TaskID,
		OriginalTaskID: a.TaskID, Source: SourceScheduler, ExecutionType: ExecutionReady, State: StateDeadlineMissed,
		Message: fmt.Sprintf("[%s] %s", a.Kind, a.Message), CreationTime: a.Due}
}

package scheduler

import (
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// Notifier sends failure notifications (the WEBHOOK error handler). Notify
// must not block: implementations queue and send in the background.
type Notifier interface {
	Notify(job jobs.Config, ev TaskEvent, st engine.Status)
}

package trace

import (
	"context"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
)

// Tee is an observe.Tasks calling each of its observers in order (e.g.
// the metrics and the trace Observer). Nil entries are skipped. It is also
// an observe.Daemons, forwarding DaemonRun to the observers that
// implement it, and an observe.Durable, forwarding Sync.
func Tee(obs ...observe.Tasks) observe.Tasks {
	var t tee
	for _, o := range obs {
		if o != nil {
			t = append(t, o)
		}
	}
	return t
}

type tee []observe.Tasks

func (t tee) Launched(ev observe.TaskEvent) {
	for _, o := range t {
		o.Launched(ev)
	}
}

func (t tee) StatusChanged(ev observe.TaskEvent, st engine.Status) {
	for _, o := range t {
		o.StatusChanged(ev, st)
	}
}

func (t tee) DaemonRun(ev observe.TaskEvent, rep jobs.DaemonReport) {
	for _, o := range t {
		if d, ok := o.(observe.Daemons); ok {
			d.DaemonRun(ev, rep)
		}
	}
}

// Sync waits for every observer that is an observe.Durable, in order; the
// first error ends it.
func (t tee) Sync(ctx context.Context) error {
	for _, o := range t {
		if d, ok := o.(observe.Durable); ok {
			if err := d.Sync(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

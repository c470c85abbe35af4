package trace

import (
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/scheduler"
)

// Tee is a scheduler.Observer calling each of its observers in order
// (e.g. the metrics and the trace Observer). Nil entries are skipped. It
// is also a scheduler.DaemonObserver, forwarding DaemonRun to the
// observers that implement it.
func Tee(obs ...scheduler.Observer) scheduler.Observer {
	var t tee
	for _, o := range obs {
		if o != nil {
			t = append(t, o)
		}
	}
	return t
}

type tee []scheduler.Observer

func (t tee) Launched(ev scheduler.TaskEvent) {
	for _, o := range t {
		o.Launched(ev)
	}
}

func (t tee) StatusChanged(ev scheduler.TaskEvent, st engine.Status) {
	for _, o := range t {
		o.StatusChanged(ev, st)
	}
}

func (t tee) Fired(job string, scheduled, committed time.Time) {
	for _, o := range t {
		o.Fired(job, scheduled, committed)
	}
}

func (t tee) ReadyDepth(n int) {
	for _, o := range t {
		o.ReadyDepth(n)
	}
}

func (t tee) OffersSeen(n, declined int) {
	for _, o := range t {
		o.OffersSeen(n, declined)
	}
}

func (t tee) DaemonRun(ev scheduler.TaskEvent, rep jobs.DaemonReport) {
	for _, o := range t {
		if d, ok := o.(scheduler.DaemonObserver); ok {
			d.DaemonRun(ev, rep)
		}
	}
}

func (t tee) Waiting(byReason map[string]int) {
	for _, o := range t {
		if w, ok := o.(scheduler.WaitingObserver); ok {
			w.Waiting(byReason)
		}
	}
}

package scheduler

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
)

// queues is the launcher's view of the ready and failover queues. The
// ready queue of a large registry holds tens of thousands of entries and
// most rounds (a status update, an offer) follow no change to it, so a
// round reads it again only when it changed: gen counts every change,
// from the queue's watch and, at once, from the loop's own commits; it is
// taken before the read, so a change the read missed always moves it on.
// Without the watch (a loop driven by hand in tests) every round reads. A
// read is never reused for longer than readyMaxAge, a safety net; a
// change found then that no notification announced is logged. Reads
// decode only the entries whose stored value changed (registry.QueueMemo).
type queues struct {
	reg     *registry.Registry
	log     *slog.Logger
	memo    *registry.QueueMemo // the instance's, kept warm between terms (Catalog.QueueMemo), or the term's own
	gen     atomic.Uint64       // changes seen to the ready queue
	watched atomic.Bool         // the watch follows the ready queue
	last    readyRead
}

// readyMaxAge bounds how long a read of the ready queue is reused.
const readyMaxAge = time.Second

type readyRead struct {
	valid bool
	gen   uint64
	at    time.Time
	queue []*queue.Ready // read-only: shared between rounds
}

// changed notes a change to the ready queue.
func (q *queues) changed() { q.gen.Add(1) }

// ready returns the ready queue, oldest first.
func (q *queues) ready(ctx context.Context, now time.Time) ([]*queue.Ready, error) {
	gen := q.gen.Load()
	last := q.last
	fresh := last.valid && last.gen == gen
	if q.watched.Load() && fresh && now.Sub(last.at) < readyMaxAge {
		return last.queue, nil
	}
	rq, err := q.reg.Work().ReadyQueueMemo(ctx, q.memo)
	if err != nil {
		q.last.valid = false
		return nil, err
	}
	if q.watched.Load() && fresh && !sameQueue(last.queue, rq) {
		q.log.Debug("launcher: the periodic re-read of the ready queue found changes its watch had not reported yet; launching from the re-read (nothing to do)", "entries", len(rq), "before", len(last.queue))
	}
	q.last = readyRead{valid: true, gen: gen, at: now, queue: rq}
	return rq, nil
}

// failover returns the failover queue, oldest first.
func (q *queues) failover(ctx context.Context) ([]queue.Failover, error) {
	return q.reg.Work().FailoverQueueMemo(ctx, q.memo)
}

// sameQueue reports whether two reads hold the same entries at the same
// versions.
func sameQueue(a, b []*queue.Ready) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Job != b[i].Job || a[i].Version != b[i].Version {
			return false
		}
	}
	return true
}

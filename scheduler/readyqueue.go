package scheduler

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// The ready queue of a large registry holds tens of thousands of entries,
// and most launch rounds (a status update, an offer) follow no change to
// it. A round reads it again only when it changed: readyGen counts every
// change, from the queue's watch (forwardWakes) and, at once, from the
// loop's own commits (stampingKV), and the generation is taken before the
// read, so a change the read missed always moves it on. Without the watch
// (a loop driven by hand in tests) every round reads. As a safety net a
// read is never reused for longer than readyMaxAge; a change found then
// that no notification announced is logged.

// readyMaxAge bounds how long a read of the ready queue is reused.
const readyMaxAge = time.Second

type readyRead struct {
	valid bool
	gen   uint64
	at    time.Time
	queue []*registry.Ready // read-only: shared between rounds
}

// readyQueue returns the ready queue, oldest first.
func (s *Scheduler) readyQueue(ctx context.Context) ([]*registry.Ready, error) {
	gen, now := s.readyGen.Load(), s.Clock.Now()
	last := s.readyRead
	fresh := last.valid && last.gen == gen
	if s.readyWatched.Load() && fresh && now.Sub(last.at) < readyMaxAge {
		return last.queue, nil
	}
	q, err := s.Registry.ReadyQueueMemo(ctx, &s.queues)
	if err != nil {
		s.readyRead.valid = false
		return nil, err
	}
	if s.readyWatched.Load() && fresh && !sameQueue(last.queue, q) {
		s.Log.Debug("launcher: the periodic re-read of the ready queue found changes its watch had not reported yet; launching from the re-read (nothing to do)", "entries", len(q), "before", len(last.queue))
	}
	s.readyRead = readyRead{valid: true, gen: gen, at: now, queue: q}
	return q, nil
}

// sameQueue reports whether two reads hold the same entries at the same
// versions.
func sameQueue(a, b []*registry.Ready) bool {
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

// stampingKV counts the commits that touch the ready queue.
type stampingKV struct {
	store.KV
	gen interface{ Add(uint64) uint64 }
}

func (k stampingKV) Commit(ctx context.Context, ops ...store.Op) error {
	err := k.KV.Commit(ctx, ops...)
	for _, op := range ops {
		if store.Under(op.Path, registry.ReadyPath) {
			k.gen.Add(1)
			break
		}
	}
	return err
}

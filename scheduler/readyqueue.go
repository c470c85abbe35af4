package scheduler

import (
	"context"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// The ready queue of a large registry holds tens of thousands of entries,
// and most launch rounds (a status update, an offer) follow no change to
// it. A round reads it again only when it changed: readyGen counts every
// change, from the queue's watch (forwardWakes) and, at once, from the
// loop's own commits (stampingKV), and the generation is taken before the
// read, so a change the read missed always moves it on. Without the watch
// (a loop driven by hand in tests) every round reads.

type readyRead struct {
	valid bool
	gen   uint64
	queue []registry.Ready // read-only: shared between rounds
}

// readyQueue returns the ready queue, oldest first.
func (s *Scheduler) readyQueue(ctx context.Context) ([]registry.Ready, error) {
	gen := s.readyGen.Load()
	if s.readyWatched.Load() && s.readyRead.valid && s.readyRead.gen == gen {
		return s.readyRead.queue, nil
	}
	q, err := s.Registry.ReadyQueueMemo(ctx, &s.queues)
	if err != nil {
		s.readyRead.valid = false
		return nil, err
	}
	s.readyRead = readyRead{valid: true, gen: gen, queue: q}
	return q, nil
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

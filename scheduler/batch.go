package scheduler

import (
	"context"

	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/store/txn"
)

var _ mesos.AsyncHandler = (*Scheduler)(nil)

// maxBatch bounds the status updates committed together (a ZooKeeper
// multi must stay well under its size limit).
const maxBatch = 256

// pendingUpdate is a status update waiting for the loop's next batch.
type pendingUpdate struct {
	st   mesos.Status
	done func(handled bool)
}

// UpdateAsync queues a status update; the loop handles the updates that
// arrived together in one batch and commits them at once (batch.go).
func (s *Scheduler) UpdateAsync(ctx context.Context, st mesos.Status, done func(bool)) {
	s.post(ctx, func(context.Context) { s.updates = append(s.updates, pendingUpdate{st, done}) })
}

// handleUpdates applies the queued updates, maxBatch at a time: each one
// through a store/txn batch that reads its predecessors' writes, then one
// commit for the batch, then the acknowledgements. If the commit fails
// (leadership lost, the store unreachable, a concurrent write) nothing of
// the batch is acknowledged: Mesos resends the updates, and the running
// mirror is reloaded.
func (s *Scheduler) handleUpdates(ctx context.Context) {
	for len(s.updates) > 0 {
		n := min(len(s.updates), maxBatch)
		batch := s.updates[:n:n]
		s.updates = s.updates[n:]
		s.handleBatch(ctx, batch)
	}
	s.updates = nil
}

func (s *Scheduler) handleBatch(ctx context.Context, batch []pendingUpdate) {
	base := s.Registry
	tx := txn.New(base.KV())
	s.Registry = base.With(tx)
	handled := make([]bool, len(batch))
	for i, u := range batch {
		handled[i] = s.onStatus(ctx, u.st) == nil
	}
	s.Registry = base
	if err := tx.Flush(ctx); err != nil {
		s.Log.Warn("status: commit a batch of updates; Mesos resends them", "updates", len(batch), "err", err)
		s.reloadRunning()
		for _, u := range batch {
			u.done(false)
		}
		return
	}
	for i, u := range batch {
		u.done(handled[i])
	}
}

package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
)

// historySyncBound bounds the wait for the history of a batch of status
// updates to be on disk (a stalled disk): past it the batch is not
// committed and the engine resends its updates.
const historySyncBound = 10 * time.Second

// durable waits until the history recorded for the updates handled so far
// is on disk, when the observers can tell (observe.Durable: the history's
// spool, fsynced). The scheduler calls it after handling a batch and
// before committing it, so that once an update is committed, and then
// acknowledged, its history survives a kill -9 of this process: the next
// start replays the spool. Without it, an update committed in the few
// milliseconds before its history reached the spool lost its history row
// for good if the process died then (tasks whose end the leader handled
// in its last milliseconds before a kill -9): the engine
// does not resend an acknowledged update, and the next leader, finding the
// end committed, takes a resent one for stale. The wait is one fsync per
// batch, partly overlapped with the handling (the spool's journal starts
// writing at the batch's first event); BenchmarkStatusBatchHistory
// measures it.
func (h *statusHandler) durable(ctx context.Context) error {
	d, ok := h.obs.(observe.Durable)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, historySyncBound)
	defer cancel()
	if err := d.Sync(ctx); err != nil {
		return fmt.Errorf("history sync: %w", err)
	}
	return nil
}

// handleOne applies a status update the scheduler makes itself (a task
// unreachable for too long counted lost) as a batch of one: handled,
// its history made durable, then committed.
func (h *statusHandler) handleOne(ctx context.Context, reg *registry.Registry, st engine.Status) error {
	b, _, flush := reg.ChainedBatch()
	if err := h.handle(ctx, b, st); err != nil {
		return err
	}
	if err := h.durable(ctx); err != nil {
		h.st.reloadRunning()
		return err
	}
	if _, err := flush(ctx); err != nil {
		h.st.reloadRunning()
		return err
	}
	return nil
}

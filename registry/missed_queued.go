package registry

import (
	"context"
	"errors"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// notQueued is instants without those job's ready entry records already
// (queue.Ready.NominalInstants): a catch-up's batches that landed before
// its term ended (the watermark goes with the last one only) queued their
// misfire=true executions, and the next term, counting from the same
// watermark, would queue them again. A catch-up's instants are after the
// watermark, which no fire commit passes before its term's catch-up has
// landed, so an instant found in the entry was queued by such a batch. An
// entry that does not decode is left to triggerOp (set aside).
func notQueued(ctx context.Context, kv store.KV, job string, instants []time.Time) ([]time.Time, error) {
	n, err := kv.Get(ctx, ReadyPath+"/"+job)
	if errors.Is(err, store.ErrNotFound) {
		return instants, nil
	}
	if err != nil {
		return nil, err
	}
	cur, err := decodeReady(n)
	if err != nil {
		return instants, nil
	}
	queued := map[int64]bool{}
	for _, at := range cur.NominalInstants() {
		if !at.IsZero() {
			queued[at.UnixNano()] = true
		}
	}
	if len(queued) == 0 {
		return instants, nil
	}
	kept := make([]time.Time, 0, len(instants))
	for _, at := range instants {
		if !queued[at.UnixNano()] {
			kept = append(kept, at)
		}
	}
	return kept, nil
}

package store

import "context"

// CommitChain commits batches as a chain (see Chainer) on any KV: with
// the KV's own CommitChain where it has one; else as one Commit of every
// batch together (one transaction, one fsync on SQLite), and, if that
// fails, batch by batch until one fails, so that what is applied is the
// prefix of batches that can be. The chain node is the Chainer's only.
func CommitChain(ctx context.Context, kv KV, hint Hint, chain string, batches [][]Op) (applied int, events [][]Event, err error) {
	if ch, ok := kv.(Chainer); ok {
		return ch.CommitChain(ctx, hint, chain, batches)
	}
	commit := func(ops []Op) ([]Event, error) {
		if r, ok := kv.(Reporter); ok {
			return r.CommitReport(ctx, ops...)
		}
		return nil, kv.Commit(ctx, ops...)
	}
	var all []Op
	for _, b := range batches {
		all = append(all, b...)
	}
	if len(batches) > 1 {
		if evs, err := commit(all); err == nil {
			events = make([][]Event, len(batches))
			events[len(batches)-1] = evs // the events of the whole, with the last batch
			return len(batches), events, nil
		}
	}
	for _, b := range batches {
		if len(b) == 0 {
			events = append(events, nil)
			applied++
			continue
		}
		evs, err := commit(b)
		if err != nil {
			return applied, events, err
		}
		events = append(events, evs)
		applied++
	}
	return applied, events, nil
}

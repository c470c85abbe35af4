package trace

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// publish hands a batch to the Sink, bounded by WriteTimeout.
func (w *Writer) publish(ctx context.Context, evs []Event) error {
	ctx, cancel := context.WithTimeout(ctx, w.opt.WriteTimeout)
	defer cancel()
	if err := w.opt.Sink.Publish(ctx, evs); err != nil {
		return fmt.Errorf("trace: publish: %w", err)
	}
	return nil
}

// Apply writes events that came through the replicated log to the
// database in one transaction, with inTx's writes (the applied position,
// the statistics the new rows add) in the same transaction, before the
// rows: inTx sees the tables as they were before the batch. Rows are idempotent by ID, so applying a batch
// twice changes nothing. A batch the database refuses for its data is
// written event by event, the refused ones set aside as the loop does,
// and inTx runs in a transaction of its own.
func (w *Writer) Apply(ctx context.Context, evs []Event, inTx func(context.Context, *sqlx.Tx) error) error {
	if w.DB() == nil {
		cctx, cancel := context.WithTimeout(ctx, w.opt.WriteTimeout)
		err := w.connect(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	evs = mergeExecutions(evs)
	err := w.sql.writeTx(ctx, evs, inTx)
	if err == nil || !isDataError(err) {
		return err
	}
	if err := w.writeBatch(ctx, evs); err != nil {
		return err
	}
	return w.sql.writeTx(ctx, nil, inTx)
}

// MarshalEvents encodes events as the spool's lines (one JSON envelope
// and a newline each): the replicated log's entry format.
func MarshalEvents(evs []Event) ([]byte, error) {
	var l lines
	l.reset()
	for _, ev := range evs {
		if err := l.add(ev); err != nil {
			return nil, err
		}
	}
	return bytes.Clone(l.buf.Bytes()), nil
}

// UnmarshalEvents decodes MarshalEvents' lines.
func UnmarshalEvents(b []byte) ([]Event, error) {
	var evs []Event
	for i, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ev, err := decodeEvent(line)
		if err != nil {
			return nil, fmt.Errorf("trace: event line %d: %w", i+1, err)
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

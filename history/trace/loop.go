package trace

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/ejcloud/elasticjob/clock"
)

// loop is the database writer: it writes spooled events in batches of
// BatchSize, at the latest FlushInterval after they were spooled, retries
// with backoff while the database is down, runs retention, and serves
// Flush. It exits when Close closes quit.
func (w *Writer) loop(down bool) {
	defer close(w.dDone)
	clk := w.opt.Clock
	l := &writerLoop{w: w, ctx: w.loopCtx, down: down, backoff: w.opt.RetryMin, retryT: clk.NewTimer(w.opt.RetryMin)}
	if !down {
		l.retryT.Stop()
	}
	flushT := clk.NewTimer(w.opt.FlushInterval)
	flushT.Stop()
	armed := false
	var retC <-chan time.Time
	var retT clock.Timer
	if w.opt.MaxAge > 0 || w.opt.MaxRows > 0 {
		retT = clk.NewTimer(w.opt.RetentionInterval)
		defer retT.Stop()
		retC = retT.C()
	}
	if !l.down && w.Depth() > 0 {
		_ = l.catchUp() // replay what an earlier run left in the spool
	}
	for {
		select {
		case <-w.quit:
			return
		case req := <-w.flushReq:
			req.done <- l.catchUp()
		case <-w.data:
			if l.down {
				continue
			}
			if err := w.drain(l.ctx, true); err != nil {
				l.fail(err)
				continue
			}
			if !armed && w.Depth() > 0 {
				flushT.Reset(w.opt.FlushInterval)
				armed = true
			}
		case <-flushT.C():
			armed = false
			if !l.down {
				_ = l.catchUp()
			}
		case <-l.retryT.C():
			_ = l.catchUp()
		case <-retC:
			if !l.down && (w.opt.RetainIf == nil || w.opt.RetainIf()) {
				w.retainScheduled(l.ctx)
			}
			retT.Reset(w.opt.RetentionInterval)
		}
	}
}

// writerLoop is the loop's view of the database: up or down, and when to
// try again while it is down (RetryMin doubling to RetryMax).
type writerLoop struct {
	w       *Writer
	ctx     context.Context
	down    bool
	backoff time.Duration
	retryT  clock.Timer
}

// fail marks the database down and arms the next try.
func (l *writerLoop) fail(err error) {
	w := l.w
	if !l.down {
		w.log.Warn("trace: history database unavailable; events stay spooled", "err", err, "spooled", w.Depth())
	}
	l.down = true
	w.m.dbUp.Set(0)
	w.m.writeErrs.Inc()
	l.retryT.Reset(l.backoff)
	l.backoff = min(l.backoff*2, w.opt.RetryMax)
}

// recovered marks the database up again.
func (l *writerLoop) recovered() {
	w := l.w
	if l.down {
		w.log.Info("trace: history database is back", "spooled", w.Depth())
	}
	l.down, l.backoff = false, w.opt.RetryMin
	w.m.dbUp.Set(1)
	l.retryT.Stop()
}

// catchUp reconnects if needed and writes everything spooled.
func (l *writerLoop) catchUp() error {
	if l.down {
		if err := l.w.connectTimeout(l.ctx); err != nil {
			l.fail(err)
			return err
		}
		l.recovered()
	}
	if err := l.w.drain(l.ctx, false); err != nil {
		l.fail(err)
		return err
	}
	return nil
}

func (w *Writer) connectTimeout(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.opt.WriteTimeout)
	defer cancel()
	return w.connect(ctx)
}

// part is the slice of one chunk a batch takes.
type part struct {
	c *chunk
	k int
}

// drain writes batches until the spool is empty (or, with fullOnly, until
// less than a full batch is left).
func (w *Writer) drain(ctx context.Context, fullOnly bool) error {
	for {
		parts, evs, err := w.nextBatch(fullOnly)
		if err != nil || len(parts) == 0 {
			return err
		}
		if w.opt.Sink != nil {
			err = w.publish(ctx, evs)
		} else {
			err = w.writeBatch(ctx, mergeExecutions(evs))
		}
		if err != nil {
			cs := make([]*chunk, len(parts))
			for i, p := range parts {
				cs[i] = p.c
			}
			w.release(cs)
			return err
		}
		w.commit(parts, len(evs))
	}
}

// nextBatch takes up to BatchSize events from the head of the spool,
// reading from disk what is not in memory.
func (w *Writer) nextBatch(fullOnly bool) ([]part, []Event, error) {
	w.mu.Lock()
	done := w.popSealedLocked()
	if w.depth == 0 || fullOnly && w.depth < w.opt.BatchSize {
		w.mu.Unlock()
		w.removeSegments(done)
		return nil, nil, nil
	}
	var take []*chunk
	need := w.opt.BatchSize
	for _, c := range w.chunks {
		if need <= 0 {
			break
		}
		if c.seal || c.n == 0 {
			continue
		}
		c.busy = true
		take = append(take, c)
		need -= c.n
	}
	w.mu.Unlock()
	w.removeSegments(done)

	var parts []part
	var evs []Event
	need = w.opt.BatchSize
	for _, c := range take {
		if c.events == nil {
			if err := w.load(c); err != nil {
				w.release(take)
				return nil, nil, err
			}
		}
		k := min(need, len(c.events))
		evs = append(evs, c.events[:k]...)
		parts = append(parts, part{c, k})
		need -= k
	}
	w.release(take[len(parts):])
	return parts, evs, nil
}

// load reads a chunk's events from its segment. Lines that cannot be
// decoded (or are missing) are counted as failed and dropped from the
// chunk.
func (w *Writer) load(c *chunk) error {
	evs, bad, err := w.spool.read(c.seq, c.start, c.n)
	if errors.Is(err, os.ErrNotExist) {
		w.log.Error("trace: spool segment vanished; its events are lost", "segment", c.seq, "events", c.n)
		err, evs = nil, nil
	}
	if err != nil {
		return err
	}
	for _, b := range bad {
		w.log.Error("trace: unreadable spool line dropped", "err", b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if lost := c.n - len(evs); lost > 0 {
		w.m.failed.Add(float64(lost))
		w.depth -= lost
		c.n = len(evs)
	}
	c.events = evs
	w.inMemory += len(evs)
	return nil
}

func (w *Writer) release(cs []*chunk) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cs {
		c.busy = false
	}
}

// commit drops the written events from their chunks and deletes the
// segments now fully written.
func (w *Writer) commit(parts []part, n int) {
	w.mu.Lock()
	for _, p := range parts {
		c := p.c
		c.events, c.start, c.n, c.busy = c.events[p.k:], c.start+p.k, c.n-p.k, false
		if len(c.events) == 0 {
			c.events = nil
		}
		w.inMemory -= p.k
		w.depth -= p.k
	}
	remove := w.popSealedLocked()
	w.m.spooled.Set(float64(w.depth))
	hook := w.afterCommit
	w.mu.Unlock()
	w.m.written.Add(float64(n))
	w.removeSegments(remove)
	if hook != nil {
		hook(n)
	}
}

// removeSegments deletes spool segments whose events are all in the
// database. The SQLite history runs with synchronous=NORMAL, so its last
// commits may still be only in the WAL without an fsync: a checkpoint
// first makes them durable (it syncs the WAL before copying it back), or
// a power loss right after the deletion could lose events that were in
// both places a moment before. Until that succeeds the segments stay (a
// restart replays them; rows already there are skipped by ID).
func (w *Writer) removeSegments(seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	if w.opt.Dialect == dialectSQLite {
		ctx, cancel := context.WithTimeout(w.loopCtx, w.opt.WriteTimeout)
		_, err := w.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		cancel()
		if err != nil {
			w.log.Warn("trace: history checkpoint failed; written spool segments kept", "segments", len(seqs), "err", err)
			return
		}
	}
	for _, seq := range seqs {
		if err := w.spool.remove(seq); err != nil {
			w.log.Warn("trace: remove written segment", "err", err)
		}
	}
}

// popSealedLocked drops written chunks from the head and returns the
// sealed segments now completely written (to delete).
func (w *Writer) popSealedLocked() []uint64 {
	var remove []uint64
	i := 0
	for ; i < len(w.chunks); i++ {
		c := w.chunks[i]
		if c.seal {
			if c.seq != 0 {
				remove = append(remove, c.seq)
			}
			continue
		}
		if c.n > 0 || c.busy {
			break
		}
	}
	w.chunks = w.chunks[i:]
	return remove
}

package trace

// journal moves recorded events to the spool: it takes everything
// pending, appends it to the current segment with one fsync (group
// commit: events recorded during an fsync go in the next group) and hands
// the placed events to the database loop. When Close stops it, it spools
// what is pending and exits.
func (w *Writer) journal() {
	defer close(w.jDone)
	for {
		w.mu.Lock()
		evs := w.pending
		w.pending = nil
		w.m.pending.Set(0)
		w.mu.Unlock()
		if len(evs) > 0 {
			w.spoolEvents(evs)
			continue
		}
		select {
		case <-w.wake:
		case <-w.stop:
			w.mu.Lock()
			empty := len(w.pending) == 0
			w.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// spoolEvents appends evs to the spool and publishes them as chunks. Events
// the spool could not take (a disk error) still go to the database loop,
// in memory only: they are lost only if the process dies before the
// database takes them.
func (w *Writer) spoolEvents(evs []Event) {
	ls := &w.lines
	ls.reset()
	enc := evs[:0:0]
	for _, ev := range evs {
		if err := ls.add(ev); err != nil {
			w.m.failed.Inc()
			w.log.Error("trace: event not encodable, dropped", "err", err)
			continue
		}
		enc = append(enc, ev)
	}
	placed, err := w.spool.append(ls.buf.Bytes(), ls.ends)
	if err != nil {
		w.m.spoolErrors.Inc()
		w.log.Error("trace: spool write failed; events kept in memory only", "err", err)
	}
	w.mu.Lock()
	off := 0
	for _, p := range placed {
		if p.n > 0 {
			w.addChunkLocked(p.seq, p.start, enc[off:off+p.n])
			off += p.n
		}
		if p.sealed {
			w.chunks = append(w.chunks, &chunk{seq: p.seq, seal: true})
		}
	}
	if rest := enc[off:]; len(rest) > 0 {
		w.chunks = append(w.chunks, &chunk{seq: 0, n: len(rest), events: rest})
		w.inMemory += len(rest)
		w.depth += len(rest)
	}
	w.journaled += uint64(len(evs))
	close(w.progress)
	w.progress = make(chan struct{})
	w.m.spooled.Set(float64(w.depth))
	w.mu.Unlock()
	select {
	case w.data <- struct{}{}:
	default:
	}
}

// addChunkLocked appends spooled events, keeping them in memory while the
// budget allows; beyond it they are left on disk, and contiguous on-disk
// runs are merged so a long outage costs one chunk per segment.
func (w *Writer) addChunkLocked(seq uint64, start int, evs []Event) {
	w.depth += len(evs)
	if w.inMemory+len(evs) <= w.opt.MaxMemory {
		w.chunks = append(w.chunks, &chunk{seq: seq, start: start, n: len(evs), events: evs})
		w.inMemory += len(evs)
		return
	}
	if n := len(w.chunks); n > 0 {
		if t := w.chunks[n-1]; !t.seal && !t.busy && t.events == nil && t.seq == seq && t.start+t.n == start {
			t.n += len(evs)
			return
		}
	}
	w.chunks = append(w.chunks, &chunk{seq: seq, start: start, n: len(evs)})
}

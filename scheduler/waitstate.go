package scheduler

import (
	"cmp"
	"hash/maphash"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/queue"
)

// What the waitRecorder keeps of each entry (waitState), and how a
// commit's writes are picked from a large backlog (pick).

type waitState struct {
	entries    map[string]waitEntry // key → since when it waits, what the registry holds of it
	recorded   int                  // entries with a record (waitEntry.rec.has)
	loaded     bool
	lastCommit time.Time
}

// recSeed seeds the hashes of the records' summaries (recSum).
var recSeed = maphash.MakeSeed()

// waitEntry is what the scheduler keeps of one entry: since when it waits
// (0 once a round found it no longer waiting) and a summary of what the
// registry holds of it (rec), written at writtenAt. 72 bytes, held in the
// map's own slots: the whole record (its message, its holders, 176
// bytes a slot apart from them) is already in the registry's copy, which
// recorded reads; this keeps only what tells whether a round's reason is
// new (BenchmarkWaitingState).
type waitEntry struct {
	since     int64 // UnixNano (nanos)
	writtenAt int64 // UnixNano
	rec       recSum
}

// recSum is what tells a recorded reason from a round's: the reason, its
// instants, and hashes of the holders' job names and of the message (a
// collision, at 2^-64, leaves a message or a holder list unwritten until
// the reason changes).
type recSum struct {
	reason       string // a queue.Wait* constant: shared, not copied
	since, until int64  // nanos
	holders      uint64
	message      uint64
	has          bool
}

// sum is the summary of w as recorded.
func sum(w queue.Wait) recSum {
	return recSum{reason: w.Reason, since: clock.UnixNano(w.Since), until: clock.UnixNano(w.Until), holders: holdersHash(w),
		message: maphash.String(recSeed, w.Message), has: true}
}

// holdersHash hashes the jobs that hold what w needs, in order.
func holdersHash(w queue.Wait) uint64 {
	if len(w.Holders) == 0 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(recSeed)
	for _, x := range w.Holders {
		h.WriteString(x.Job)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// setRecord notes what the registry now holds of k, written at at (zero:
// when is not known).
func (ws *waitState) setRecord(k string, rec queue.Wait, at time.Time) {
	e := ws.entries[k]
	if !e.rec.has {
		ws.recorded++
	}
	e.rec = sum(rec)
	if !at.IsZero() {
		e.writtenAt = at.UnixNano()
	}
	ws.entries[k] = e
}

// dropRecord notes that the registry holds nothing of k.
func (ws *waitState) dropRecord(k string) {
	e, ok := ws.entries[k]
	if !ok || !e.rec.has {
		return
	}
	ws.recorded--
	if e.since == 0 {
		delete(ws.entries, k)
		return
	}
	e.rec, e.writtenAt = recSum{}, 0
	ws.entries[k] = e
}

// loadRecords replaces what is known of the registry's records with rec
// (read from it), keeping when this instance wrote those it wrote.
func (ws *waitState) loadRecords(rec map[string]queue.Wait) {
	for k, e := range ws.entries {
		if _, ok := rec[k]; e.rec.has && !ok {
			ws.dropRecord(k)
		}
	}
	for k, w := range rec {
		ws.setRecord(k, w, time.Time{})
	}
}

// staleKey orders the entries whose message alone changed: the longest
// unwritten first.
type staleKey struct {
	writtenAt int64
	key       string
}

func (a staleKey) before(b staleKey) bool {
	return cmp.Or(cmp.Compare(a.writtenAt, b.writtenAt), cmp.Compare(a.key, b.key)) < 0
}

// pick keeps the n least of what it is given (n 0: all; n < 0: none),
// in no order, in a heap whose root is the greatest kept; seen counts
// what it was given.
type pick[T any] struct {
	n     int
	less  func(a, b T) bool
	items []T
	seen  int
}

func (p *pick[T]) add(x T) {
	p.seen++
	switch {
	case p.n < 0:
	case p.n == 0 || len(p.items) < p.n:
		p.items = append(p.items, x)
		if p.n > 0 {
			p.up(len(p.items) - 1)
		}
	case p.less(x, p.items[0]):
		p.items[0] = x
		p.down(0)
	}
}

func (p *pick[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !p.less(p.items[parent], p.items[i]) {
			return
		}
		p.items[parent], p.items[i] = p.items[i], p.items[parent]
		i = parent
	}
}

func (p *pick[T]) down(i int) {
	for {
		big, l, r := i, 2*i+1, 2*i+2
		if l < len(p.items) && p.less(p.items[big], p.items[l]) {
			big = l
		}
		if r < len(p.items) && p.less(p.items[big], p.items[r]) {
			big = r
		}
		if big == i {
			return
		}
		p.items[i], p.items[big] = p.items[big], p.items[i]
		i = big
	}
}

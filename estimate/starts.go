package estimate

import (
	"container/heap"
	"time"
)

// Res is a quantity of resources: CPUs and memory (MB).
type Res struct {
	CPUs  float64
	MemMB float64
}

func (r Res) covers(n Res) bool {
	const eps = 1e-9
	return r.CPUs+eps >= n.CPUs && r.MemMB+eps >= n.MemMB
}

// Holding is running work: what it holds and when it is expected to end
// (End; zero: not known, it frees nothing the estimate counts on).
type Holding struct {
	Holds Res
	End   time.Time
}

// Entry is waiting work: what it needs to start (all its shards) and how
// long it is expected to run once started (Run, its job's p90; zero: not
// known, what it takes is not given back within the estimate). Frees is
// what its start gives back at once: the old tasks of DAEMON shards moving
// with an overlap, which stop as their replacements (this entry) run, so
// that the move holds each shard once beyond that instant, not twice.
type Entry struct {
	Needs Res
	Run   time.Duration
	Frees Res
}

// Starts estimates when each waiting entry starts, taken in order (its
// namespace's order: an entry never starts before the one ahead of it):
// free is what the entries may take now; each running holding gives back
// what it holds at its expected end (at now when that end has passed);
// an entry starts at the first instant what was given back covers its
// needs, gives back what it Frees then, and its needs at its own expected
// end. An entry whose
// needs nothing known would cover, and every entry after it, gets the
// zero time (not known).
func Starts(now time.Time, free Res, running []Holding, waiting []Entry) []time.Time {
	out := make([]time.Time, len(waiting))
	ends := make(endHeap, 0, len(running)+len(waiting))
	for _, h := range running {
		if h.End.IsZero() {
			continue
		}
		ends = append(ends, ending{at: later(h.End, now), res: h.Holds})
	}
	heap.Init(&ends)
	t, avail := now, free
	for i, e := range waiting {
		for !avail.covers(e.Needs) {
			if len(ends) == 0 {
				return out // the rest: not known
			}
			x := heap.Pop(&ends).(ending)
			t = later(x.at, t)
			avail.CPUs += x.res.CPUs
			avail.MemMB += x.res.MemMB
		}
		out[i] = t
		avail.CPUs -= e.Needs.CPUs - e.Frees.CPUs
		avail.MemMB -= e.Needs.MemMB - e.Frees.MemMB
		if e.Run > 0 {
			heap.Push(&ends, ending{at: t.Add(e.Run), res: e.Needs})
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

type ending struct {
	at  time.Time
	res Res
}

type endHeap []ending

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(ending)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Tracker keeps the first start estimate given to each waiting execution
// (named by K) and, when it starts, how far off it was relative to its
// wait: the error the metric elasticjob_start_estimate_error_ratio
// observes. An execution costs its key and 24 bytes, in the map's slots.
// Not safe for concurrent use.
type Tracker[K comparable] struct {
	first map[K]guess
	pass  uint32 // Unnoted's passes
}

// guess is a first estimate: since when its execution waits and when it
// was estimated to start (UnixNano), and the last pass that noted it.
type guess struct {
	since, est int64
	pass       uint32
}

// Note records est as the estimated start of the execution key, waiting
// since since, unless one was recorded already (the first is kept), and
// marks key as still waiting in this pass (Unnoted).
func (t *Tracker[K]) Note(key K, since, est time.Time) {
	if t.first == nil {
		t.first = map[K]guess{}
	}
	if g, ok := t.first[key]; ok {
		if g.pass != t.pass {
			g.pass = t.pass
			t.first[key] = g
		}
		return
	}
	if !est.IsZero() {
		t.first[key] = guess{since.UnixNano(), est.UnixNano(), t.pass}
	}
}

// Started reports the error of key's first estimate, now that it started
// at actual: |estimate − actual| and that divided by its wait (actual −
// since; ok false when none was noted or it did not wait).
func (t *Tracker[K]) Started(key K, actual time.Time) (abs time.Duration, ratio float64, ok bool) {
	g, found := t.first[key]
	if !found {
		return 0, 0, false
	}
	delete(t.first, key)
	abs = time.Duration(g.est - actual.UnixNano())
	if abs < 0 {
		abs = -abs
	}
	wait := time.Duration(actual.UnixNano() - g.since)
	if wait <= 0 {
		return abs, 0, false
	}
	return abs, float64(abs) / float64(wait), true
}

// Unnoted yields the executions with an estimate that no Note named since
// the last Unnoted (they left the queue), and begins a new pass. The
// caller may call Started or Forget on each as it is yielded.
func (t *Tracker[K]) Unnoted(yield func(K) bool) {
	pass := t.pass
	t.pass++
	for k, g := range t.first {
		if g.pass == pass {
			continue
		}
		if !yield(k) {
			return
		}
	}
}

// Len is how many executions have an estimate noted.
func (t *Tracker[K]) Len() int { return len(t.first) }

// Forget drops key's estimate (it left the queue without starting).
func (t *Tracker[K]) Forget(key K) { delete(t.first, key) }

// Group is one namespace's work in a shared pool (StartsShared): its
// weight (0 counts as 1), its running work and its waiting work in its
// own order.
type Group struct {
	Weight  float64
	Running []Holding
	Waiting []Entry
}

// StartsShared estimates when the waiting work of several namespaces
// drawing on one pool starts (free: what the pool leaves now; total: the
// cluster's total, for the shares): as the launch round lends capacity
// beyond guarantees, the namespace whose running work holds the smallest
// weighted dominant share of total goes next (ties: the earlier group;
// callers order groups by their oldest waiting work), its next entry
// starting at the first instant the pool covers it; none passes it while
// it waits (it holds the reservation). Each group's entries get their
// times in their order; what nothing known would free gets the zero time,
// and so does everything still waiting then.
func StartsShared(now time.Time, free, total Res, groups []Group) [][]time.Time {
	out := make([][]time.Time, len(groups))
	held := make([]Res, len(groups))
	next := make([]int, len(groups))
	var ends groupEnds
	for g, gr := range groups {
		out[g] = make([]time.Time, len(gr.Waiting))
		for _, h := range gr.Running {
			held[g].CPUs += h.Holds.CPUs
			held[g].MemMB += h.Holds.MemMB
			if !h.End.IsZero() {
				ends = append(ends, groupEnd{ending{at: later(h.End, now), res: h.Holds}, g})
			}
		}
	}
	heap.Init(&ends)
	share := func(g int) float64 {
		s := 0.0
		if total.CPUs > 0 {
			s = held[g].CPUs / total.CPUs
		}
		if total.MemMB > 0 {
			s = max(s, held[g].MemMB/total.MemMB)
		}
		w := groups[g].Weight
		if w <= 0 {
			w = 1
		}
		return s / w
	}
	t, avail := now, free
	for {
		pick := -1
		for g := range groups {
			if next[g] < len(groups[g].Waiting) && (pick < 0 || share(g) < share(pick)) {
				pick = g
			}
		}
		if pick < 0 {
			return out
		}
		e := groups[pick].Waiting[next[pick]]
		if !avail.covers(e.Needs) {
			if len(ends) == 0 {
				return out // the rest: not known
			}
			x := heap.Pop(&ends).(groupEnd)
			t = later(x.at, t)
			avail.CPUs += x.res.CPUs
			avail.MemMB += x.res.MemMB
			held[x.group].CPUs -= x.res.CPUs
			held[x.group].MemMB -= x.res.MemMB
			continue
		}
		out[pick][next[pick]] = t
		next[pick]++
		avail.CPUs -= e.Needs.CPUs - e.Frees.CPUs
		avail.MemMB -= e.Needs.MemMB - e.Frees.MemMB
		held[pick].CPUs += e.Needs.CPUs - e.Frees.CPUs
		held[pick].MemMB += e.Needs.MemMB - e.Frees.MemMB
		if e.Run > 0 {
			heap.Push(&ends, groupEnd{ending{at: t.Add(e.Run), res: e.Needs}, pick})
		}
	}
}

type groupEnd struct {
	ending
	group int
}

type groupEnds []groupEnd

func (h groupEnds) Len() int           { return len(h) }
func (h groupEnds) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h groupEnds) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *groupEnds) Push(x any)        { *h = append(*h, x.(groupEnd)) }
func (h *groupEnds) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

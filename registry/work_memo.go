package registry

import (
	"bytes"
	"context"
	"slices"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
)

// QueueMemo keeps the decoded ready and failover entries of the last read,
// so reading the queues again decodes only the entries whose stored value
// changed: the launcher reads them every round, and most entries did not
// change since the previous one. It is not safe for concurrent use.
//
// A read of the ready queue points at the memo's entries, which are never
// changed once read: an entry whose value or version changed gets a new
// one. So a read stays as it was through the next one (the launcher
// compares the two), though the reads take turns in two arrays of
// pointers. Tens of thousands of entries made anew for each read were a
// twentieth of all the scheduler allocated on ZooKeeper, and two arrays of
// entries (112 bytes each) held 26 MB of the scheduler's heap with 80,000
// jobs waiting.
//
// The ready queue's order is kept too: a read orders only the entries new
// or changed since the last one and merges them into the last read's
// order (O(n + k log k) for k changed of n, instead of ordering all n
// every round: at 100,000 entries the sort was a quarter of a read). The
// order is total (queue.CompareReady), so the merge gives exactly the
// full sort's result (TestReadyQueueMemoOrderIsTheFullOrder).
type QueueMemo struct {
	ready map[string]*memo[queue.Ready]
	fail  map[string]memo[queue.Failover]
	gen   uint64 // the read that last saw each ready entry (memo.gen)
	bufs  [2][]*queue.Ready
	// order is the last complete read's entries in their order (each
	// with memo.ordered set); fresh is a read's new or changed entries,
	// reused.
	order []*memo[queue.Ready]
	fresh []*memo[queue.Ready]
}

type memo[T any] struct {
	raw     []byte // the stored value it was decoded from (never written to)
	v       T
	gen     uint64
	ordered bool // QueueMemo.order holds it (an entry leaves the order only when it leaves the memo)
}

// ReadyHeld is how many decoded ready entries the memo holds.
func (m *QueueMemo) ReadyHeld() int { return len(m.ready) }

// ReadyQueueMemo is ReadyQueue, decoding only what changed since the
// memo's last read. The entries are the memo's: not to be modified.
func (wk Work) ReadyQueueMemo(ctx context.Context, m *QueueMemo) ([]*queue.Ready, error) {
	nodes, err := wk.r.kv.List(ctx, ReadyPath)
	if err != nil {
		return nil, err
	}
	if m.ready == nil {
		m.ready = make(map[string]*memo[queue.Ready], len(nodes))
	}
	m.gen++ // entries this read does not see are dropped below
	buf := &m.bufs[m.gen%2]
	if cap(*buf) < len(nodes) || cap(*buf) > 4*len(nodes)+64 {
		*buf = make([]*queue.Ready, 0, len(nodes)+len(nodes)/4+64) // room for a growing backlog
	}
	fresh := m.fresh[:0]
	seen := 0
	for _, n := range nodes {
		e, err := wk.readyEntry(m, n)
		if err != nil {
			return nil, err
		}
		if e == nil {
			continue // set aside: not in the queue, decoded again next read (logged once)
		}
		e.gen = m.gen
		seen++
		if !e.ordered {
			fresh = append(fresh, e) // not in the last read's order
		}
	}
	if len(m.ready) > seen {
		for p, e := range m.ready {
			if e.gen != m.gen {
				delete(m.ready, p)
			}
		}
	}
	order := m.merge(fresh)
	clear(fresh) // nothing kept alive by the scratch list
	m.fresh = fresh[:0]
	if cap(fresh) > freshKept {
		m.fresh = nil // a first read's (every entry new): not held between rounds
	}
	out := (*buf)[:0]
	for _, e := range order {
		out = append(out, &e.v)
	}
	clear(out[len(out):cap(out)]) // the rest of an earlier read: nothing kept alive
	*buf = out
	return out, nil
}

// readyEntry is the memo's entry for n, decoded again if its value
// changed, a new one if only its version did (nil: set aside as damaged).
func (wk Work) readyEntry(m *QueueMemo, n store.Node) (*memo[queue.Ready], error) {
	e := m.ready[n.Path]
	switch {
	case e == nil || !bytes.Equal(e.raw, n.Value):
		rd, err := decodeReady(n)
		if wk.r.setAside(n, err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		e = &memo[queue.Ready]{raw: n.Value, v: rd}
		m.ready[n.Path] = e
	case e.v.Version != n.Version: // the same value written again
		v := e.v
		v.Version = n.Version
		e = &memo[queue.Ready]{raw: e.raw, v: v}
		m.ready[n.Path] = e
	}
	return e, nil
}

// freshKept bounds the scratch list of new or changed entries a memo keeps
// between reads (a round's changes are a few thousand at most).
const freshKept = 4096

// merge makes the order of the read in progress (m.gen): the last read's
// entries this read saw unchanged, in their order, merged with fresh (the
// new or changed ones), ordered here.
func (m *QueueMemo) merge(fresh []*memo[queue.Ready]) []*memo[queue.Ready] {
	kept := m.order[:0]
	for _, e := range m.order {
		if e.gen == m.gen { // seen by this read: the same entry, unchanged
			kept = append(kept, e)
		}
	}
	clear(m.order[len(kept):]) // entries gone or replaced: not kept alive
	slices.SortFunc(fresh, func(a, b *memo[queue.Ready]) int { return compareReady(&a.v, &b.v) })
	n := len(kept) + len(fresh)
	order := kept
	if cap(order) < n || cap(order) > 4*n+64 {
		order = make([]*memo[queue.Ready], len(kept), n+n/4+64) // room for a growing backlog
		copy(order, kept)
	}
	order = order[:n]
	// Merge from the back: kept is order's front, so nothing is overwritten
	// before it is read.
	i, j := len(kept)-1, len(fresh)-1
	for k := n - 1; j >= 0; k-- {
		if i >= 0 && compareReady(&order[i].v, &fresh[j].v) > 0 {
			order[k] = order[i]
			i--
		} else {
			order[k] = fresh[j]
			j--
		}
	}
	for _, e := range fresh {
		e.ordered = true
	}
	m.order = order
	return order
}

// FailoverQueueMemo is FailoverQueue, decoding only what changed since the
// memo's last read.
func (wk Work) FailoverQueueMemo(ctx context.Context, m *QueueMemo) ([]queue.Failover, error) {
	jobNames, err := wk.r.kv.Children(ctx, failoverPath)
	if err != nil {
		return nil, err
	}
	next := map[string]memo[queue.Failover]{}
	var out []queue.Failover
	for _, job := range jobNames {
		nodes, err := wk.r.kv.List(ctx, failoverPath+"/"+job)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			e, ok := m.fail[n.Path]
			if !ok || !bytes.Equal(e.raw, n.Value) {
				f, ok, err := decodeFailover(job, n)
				if wk.r.setAside(n, err) {
					continue
				}
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				e = memo[queue.Failover]{raw: n.Value, v: f}
			}
			e.v.Version = n.Version
			next[n.Path] = e
			out = append(out, e.v)
		}
	}
	m.fail = next
	sortFailover(out)
	return out, nil
}

// decodeFailover decodes a failover node (ok false for a node that is not
// a shard's entry).
func decodeFailover(job string, n store.Node) (queue.Failover, bool, error) {
	var f queue.Failover
	_, item, err := jobs.ParseMetaKey(lastSegment(n.Path))
	if err != nil || len(n.Value) == 0 {
		return f, false, nil
	}
	if err := decodeAt(n.Path, n.Value, &f); err != nil {
		return f, false, err
	}
	f.Job, f.Item, f.Version = job, item, n.Version
	return f, true, nil
}

// sortReady orders entries oldest first, then by job: a total order (one
// entry per job), so an unstable sort gives the one result.
func sortReady(out []queue.Ready) {
	slices.SortFunc(out, func(a, b queue.Ready) int { return compareReady(&a, &b) })
}

func compareReady(a, b *queue.Ready) int { return queue.CompareReady(a, b) }

// sortFailover orders entries oldest first, then by job and shard: a total
// order (one entry per shard).
func sortFailover(out []queue.Failover) {
	slices.SortFunc(out, func(a, b queue.Failover) int { return queue.CompareFailover(&a, &b) })
}

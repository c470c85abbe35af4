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
type QueueMemo struct {
	ready map[string]*memo[queue.Ready]
	fail  map[string]memo[queue.Failover]
	gen   uint64 // the read that last saw each ready entry (memo.gen)
	bufs  [2][]*queue.Ready
}

type memo[T any] struct {
	raw []byte // the stored value it was decoded from (never written to)
	v   T
	gen uint64
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
	out := (*buf)[:0]
	for _, n := range nodes {
		e := m.ready[n.Path]
		switch {
		case e == nil || !bytes.Equal(e.raw, n.Value):
			rd, err := decodeReady(n)
			if wk.r.setAside(n, err) {
				continue // set aside: not in the queue, decoded again next read (logged once)
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
		e.gen = m.gen
		out = append(out, &e.v)
	}
	if len(m.ready) > len(nodes) {
		for p, e := range m.ready {
			if e.gen != m.gen {
				delete(m.ready, p)
			}
		}
	}
	clear(out[len(out):cap(out)]) // the rest of an earlier read: nothing kept alive
	*buf = out
	slices.SortFunc(out, compareReady)
	return out, nil
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

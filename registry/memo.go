package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/store"
)

// QueueMemo keeps the decoded ready and failover entries of the last read,
// so reading the queues again decodes only the entries whose stored value
// changed: the launcher reads them every round, and most entries did not
// change since the previous one. It is not safe for concurrent use.
type QueueMemo struct {
	ready map[string]memo[Ready]
	fail  map[string]memo[Failover]
}

type memo[T any] struct {
	raw []byte // the stored value it was decoded from (never written to)
	v   T
}

// ReadyQueueMemo is ReadyQueue, decoding only what changed since the
// memo's last read.
func (r *Registry) ReadyQueueMemo(ctx context.Context, m *QueueMemo) ([]Ready, error) {
	nodes, err := r.kv.List(ctx, ReadyPath)
	if err != nil {
		return nil, err
	}
	next := make(map[string]memo[Ready], len(nodes))
	out := make([]Ready, 0, len(nodes))
	for _, n := range nodes {
		e, ok := m.ready[n.Path]
		if !ok || !bytes.Equal(e.raw, n.Value) {
			rd, err := decodeReady(n)
			if err != nil {
				return nil, err
			}
			e = memo[Ready]{raw: n.Value, v: rd}
		}
		e.v.Version = n.Version
		next[n.Path] = e
		out = append(out, e.v)
	}
	m.ready = next
	sortReady(out)
	return out, nil
}

// FailoverQueueMemo is FailoverQueue, decoding only what changed since the
// memo's last read.
func (r *Registry) FailoverQueueMemo(ctx context.Context, m *QueueMemo) ([]Failover, error) {
	jobNames, err := r.kv.Children(ctx, FailoverPath)
	if err != nil {
		return nil, err
	}
	next := map[string]memo[Failover]{}
	var out []Failover
	for _, job := range jobNames {
		nodes, err := r.kv.List(ctx, FailoverPath+"/"+job)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			e, ok := m.fail[n.Path]
			if !ok || !bytes.Equal(e.raw, n.Value) {
				f, ok, err := decodeFailover(job, n)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				e = memo[Failover]{raw: n.Value, v: f}
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
func decodeFailover(job string, n store.Node) (Failover, bool, error) {
	var f Failover
	_, item, err := jobs.ParseMetaKey(lastSegment(n.Path))
	if err != nil || len(n.Value) == 0 {
		return f, false, nil
	}
	if err := json.Unmarshal(n.Value, &f); err != nil {
		return f, false, fmt.Errorf("registry: decode %s: %w", n.Path, err)
	}
	f.Job, f.Item, f.Version = job, item, n.Version
	return f, true, nil
}

func sortReady(out []Ready) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Job < out[j].Job
	})
}

func sortFailover(out []Failover) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		if out[i].Job != out[j].Job {
			return out[i].Job < out[j].Job
		}
		return out[i].Item < out[j].Item
	})
}

package replog

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// pruneBatch is the deletes of one transaction (below etcd's 128).
const pruneBatch = 100

// Prune deletes the entries every replica applied (the lowest
// acknowledged position of Options.Replicas, or of those that
// acknowledged), then the oldest entries past MaxEntries, recording the
// highest revision the bound removed under Prefix+"/floor". It returns
// how many entries it deleted.
func (l *Log) Prune(ctx context.Context) (int, error) {
	low, err := l.lowestAck(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	if low > 0 {
		k, err := l.deleteOldest(ctx, clientv3.WithMaxModRev(low), 1<<30)
		n += k
		if err != nil {
			return n, err
		}
	}
	resp, err := l.o.Client.Get(ctx, l.logPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return n, fmt.Errorf("replog: count log: %w", err)
	}
	l.m.entries.Set(float64(resp.Count))
	if over := int(resp.Count) - l.o.MaxEntries; over > 0 {
		k, err := l.deleteOldest(ctx, nil, over)
		n += k
		l.m.bounded.Add(float64(k))
		l.m.entries.Set(float64(int(resp.Count) - k))
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// lowestAck is the lowest position the replicas acknowledged (0: one of
// Options.Replicas has not yet).
func (l *Log) lowestAck(ctx context.Context) (int64, error) {
	resp, err := l.o.Client.Get(ctx, l.ackPrefix(), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("replog: read acknowledgements: %w", err)
	}
	acks := map[string]int64{}
	for _, kv := range resp.Kvs {
		v, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil {
			continue
		}
		acks[strings.TrimPrefix(string(kv.Key), l.ackPrefix())] = v
	}
	names := l.o.Replicas
	if len(names) == 0 {
		for name := range acks {
			names = append(names, name)
		}
	}
	var low int64 = -1
	for _, name := range names {
		v := acks[name]
		if low < 0 || v < low {
			low = v
		}
	}
	return max(low, 0), nil
}

// deleteOldest deletes up to limit entries, oldest first, among those
// opt (nil: all) selects. With no opt the deletes raise the floor.
func (l *Log) deleteOldest(ctx context.Context, opt clientv3.OpOption, limit int) (int, error) {
	n := 0
	for n < limit {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend), clientv3.WithLimit(int64(min(pruneBatch, limit-n)))}
		if opt != nil {
			opts = append(opts, opt)
		}
		resp, err := l.o.Client.Get(ctx, l.logPrefix(), opts...)
		if err != nil {
			return n, fmt.Errorf("replog: list log: %w", err)
		}
		if len(resp.Kvs) == 0 {
			return n, nil
		}
		ops := make([]clientv3.Op, 0, len(resp.Kvs)+1)
		for _, kv := range resp.Kvs {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
		if opt == nil {
			top := resp.Kvs[len(resp.Kvs)-1].ModRevision
			ops = append(ops, clientv3.OpPut(l.floorKey(), strconv.FormatInt(top, 10)))
		}
		if _, err := l.o.Client.Txn(ctx).Then(ops...).Commit(); err != nil {
			return n, fmt.Errorf("replog: prune: %w", err)
		}
		n += len(resp.Kvs)
		l.m.pruned.Add(float64(len(resp.Kvs)))
	}
	return n, nil
}

func (l *Log) pruneLoop(ctx context.Context) {
	t := l.o.Clock.NewTimer(l.o.PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if l.o.PruneIf == nil || l.o.PruneIf() {
			if _, err := l.Prune(ctx); err != nil && ctx.Err() == nil {
				l.o.Log.Warn("replog: prune", "err", err)
			}
		}
		t.Reset(l.o.PruneInterval)
	}
}

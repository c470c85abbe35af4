package replog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/history/trace"
)

// positionTable holds, in the replica's own history database, the
// revision up to which it applied the log; it is written in the same
// transaction as the rows.
const positionTable = "HISTORY_REPLICATION"

func (l *Log) ensureTable(ctx context.Context) error {
	db, err := l.w.QueryDB()
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+positionTable+" (name TEXT PRIMARY KEY, revision INTEGER NOT NULL)")
	if err != nil {
		return fmt.Errorf("replog: %s: %w", positionTable, err)
	}
	var rev int64
	err = db.GetContext(ctx, &rev, "SELECT revision FROM "+positionTable+" WHERE name = 'log'")
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("replog: read position: %w", err)
	}
	l.advance(rev)
	return nil
}

// apply writes the events of entries and moves the position to rev in
// the same transaction.
func (l *Log) apply(ctx context.Context, kvs []*mvccpb.KeyValue, rev int64) error {
	var evs []trace.Event
	for _, kv := range kvs {
		e, err := decodeEntry(kv.Value)
		if err != nil {
			l.m.bad.Inc()
			l.o.Log.Error("replog: entry not decodable, skipped", "key", string(kv.Key), "err", err)
			continue
		}
		evs = append(evs, e...)
	}
	err := l.w.Apply(ctx, evs, func(ctx context.Context, tx *sqlx.Tx) error {
		if l.o.CountResults {
			if err := l.countResults(ctx, tx, evs); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO "+positionTable+" (name, revision) VALUES ('log', ?) "+
			"ON CONFLICT(name) DO UPDATE SET revision = MAX(revision, excluded.revision)", rev)
		return err
	})
	if err != nil {
		return fmt.Errorf("replog: apply up to revision %d: %w", rev, err)
	}
	l.advance(rev)
	l.m.applied.Add(float64(len(evs)))
	l.m.position.Set(float64(rev))
	return nil
}

// CatchUp applies every entry after the applied position that the log
// holds now, a page at a time, and returns the revision it read at.
func (l *Log) CatchUp(ctx context.Context) (int64, error) {
	if l.w == nil {
		return 0, errors.New("replog: no writer bound (Bind)")
	}
	if err := l.ensureTable(ctx); err != nil {
		return 0, err
	}
	from := l.applied.Load()
	if err := l.checkFloor(ctx, from); err != nil {
		return 0, err
	}
	var at int64
	for {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMinModRev(from + 1),
			clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend), clientv3.WithLimit(int64(l.o.PageSize))}
		if at > 0 {
			opts = append(opts, clientv3.WithRev(at))
		}
		resp, err := l.o.Client.Get(ctx, l.logPrefix(), opts...)
		if err != nil {
			return 0, fmt.Errorf("replog: read log: %w", err)
		}
		if at == 0 {
			at = resp.Header.Revision
		}
		if len(resp.Kvs) == 0 {
			return at, l.applyPosition(ctx, at)
		}
		last := resp.Kvs[len(resp.Kvs)-1].ModRevision
		pos := last
		if !resp.More {
			pos = at
		}
		if err := l.apply(ctx, resp.Kvs, pos); err != nil {
			return 0, err
		}
		if !resp.More {
			return at, l.ack(ctx)
		}
		from = last
	}
}

// applyPosition records rev as applied when no entry came before it.
func (l *Log) applyPosition(ctx context.Context, rev int64) error {
	if rev <= l.applied.Load() {
		return nil
	}
	if err := l.apply(ctx, nil, rev); err != nil {
		return err
	}
	return l.ack(ctx)
}

// checkFloor counts entries pruned by the bound before this replica
// applied them: its history misses their rows.
func (l *Log) checkFloor(ctx context.Context, applied int64) error {
	resp, err := l.o.Client.Get(ctx, l.floorKey())
	if err != nil {
		return fmt.Errorf("replog: read floor: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	floor, _ := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if applied < floor {
		l.m.gaps.Inc()
		l.o.Log.Error("replog: entries this replica had not applied were pruned by the bound; its history misses their rows",
			"applied", applied, "pruned_through", floor, "replica", l.o.Name)
	}
	return nil
}

// ack publishes the applied position (what pruning waits for).
func (l *Log) ack(ctx context.Context) error {
	_, err := l.o.Client.Put(ctx, l.ackKey(l.o.Name), strconv.FormatInt(l.applied.Load(), 10))
	if err != nil {
		return fmt.Errorf("replog: acknowledge: %w", err)
	}
	return nil
}

// Run applies the log to the bound writer's database until ctx ends:
// catch up by reading, then follow a watch from the revision read at;
// a watch that fails (compacted, member gone) goes back to reading. It
// also prunes every PruneInterval when PruneIf allows.
func (l *Log) Run(ctx context.Context) error {
	pruned := make(chan struct{})
	go func() { defer close(pruned); l.pruneLoop(ctx) }()
	defer func() { <-pruned }()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		at, err := l.CatchUp(ctx)
		if err == nil {
			backoff = 100 * time.Millisecond
			err = l.follow(ctx, at)
		}
		if ctx.Err() != nil {
			break
		}
		l.o.Log.Warn("replog: following the history log", "err", err)
		t := l.o.Clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
		backoff = min(backoff*2, 5*time.Second)
	}
	return nil
}

// follow applies the entries a watch delivers after revision at.
func (l *Log) follow(ctx context.Context, at int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := l.o.Client.Watch(wctx, l.logPrefix(), clientv3.WithPrefix(), clientv3.WithRev(at+1))
	lastAck := l.o.Clock.Now()
	for resp := range wch {
		if err := resp.Err(); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				return fmt.Errorf("replog: watch compacted at %d: reading the log again", resp.CompactRevision)
			}
			return fmt.Errorf("replog: watch: %w", err)
		}
		var kvs []*mvccpb.KeyValue
		rev := l.applied.Load()
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypePut {
				kvs = append(kvs, ev.Kv)
			}
			rev = max(rev, ev.Kv.ModRevision)
		}
		if len(kvs) == 0 {
			continue
		}
		if err := l.apply(ctx, kvs, rev); err != nil {
			return err
		}
		if now := l.o.Clock.Now(); l.o.AckInterval < 0 || now.Sub(lastAck) >= l.o.AckInterval {
			lastAck = now
			if err := l.ack(ctx); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("replog: watch ended: %w", ctx.Err())
}

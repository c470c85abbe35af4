package replog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/history/trace"
)

// DefaultPrefix is where the log lives when Options.Prefix is empty,
// beside the registry's keys (store/etcd's "/elasticjob-cloud/n/…").
const DefaultPrefix = "/elasticjob-cloud/history"

// Options configure a Log.
type Options struct {
	Client *clientv3.Client // required: the replicated store's client
	Prefix string           // DefaultPrefix when empty
	// Name is this replica's name (its etcd member's): its acknowledged
	// position is Prefix+"/ack/"+Name.
	Name string
	// Replicas are the names of every replica that must apply an entry
	// before it is pruned; a replica that never acknowledged holds
	// pruning back (to the bound). Empty: the replicas that acknowledged.
	Replicas []string
	// MaxEntries bounds the log (4,096 entries when 0): past it, the
	// oldest entries go even if a replica has not applied them.
	MaxEntries int
	// MaxEntryBytes bounds one entry's events' lines before compression
	// (512 KiB when 0; the stored value is about an eighth: entry.go); a
	// bigger batch is several entries.
	MaxEntryBytes int
	// PageSize is the entries read per request while catching up (64).
	PageSize int
	// PruneInterval is how often Run prunes (30 s), when PruneIf allows.
	PruneInterval time.Duration
	// PruneIf gates Run's pruning (nil: always; every replica may prune,
	// deletes are idempotent, but the leader alone is enough).
	PruneIf func() bool
	// AckInterval bounds how often the acknowledged position is written
	// while entries stream in (1 s when 0; negative: after every entry).
	AckInterval time.Duration
	// CountResults: count task results into the statistics tables as
	// the log is applied (stats.go), on every replica; the scheduler then
	// does not feed its collector task results. Location sets the hour
	// and day rows' boundaries, as history.Options.Location (time.Local).
	CountResults bool
	Location     *time.Location
	Clock        clock.Clock
	Log          *slog.Logger
}

func (o *Options) defaults() error {
	if o.Client == nil {
		return errors.New("replog: Client is required")
	}
	if o.Name == "" {
		return errors.New("replog: Name is required (the replica's member name)")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 4096
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = 512 << 10
	}
	if o.PageSize <= 0 {
		o.PageSize = 64
	}
	if o.PruneInterval <= 0 {
		o.PruneInterval = 30 * time.Second
	}
	if o.AckInterval == 0 {
		o.AckInterval = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Log is the replicated history log of one replica: its Publish is the
// trace writer's Sink, its Run applies every entry to the replica's
// history database.
type Log struct {
	o       Options
	w       *trace.Writer
	seq     atomic.Uint64
	boot    string
	applied atomic.Int64
	m       *metrics

	mu       sync.Mutex
	advanced chan struct{} // closed and replaced when applied grows
}

var _ trace.Sink = (*Log)(nil)

// New returns the log of one replica. w is the replica's trace writer
// (opened with Options.Sink set to this Log: see Bind) whose SQLite
// database the entries are applied to; it may be nil for a Log that
// only publishes.
func New(o Options) (*Log, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &Log{o: o, boot: strconv.FormatInt(o.Clock.Now().UnixNano(), 36), m: newMetrics(), advanced: make(chan struct{})}, nil
}

func (l *Log) advance(rev int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rev > l.applied.Load() {
		l.applied.Store(rev)
		close(l.advanced)
		l.advanced = make(chan struct{})
	}
}

// WaitApplied waits until this replica applied the log up to rev (a
// revision from a store write or a Revision call: read-your-writes).
func (l *Log) WaitApplied(ctx context.Context, rev int64) error {
	for {
		l.mu.Lock()
		done, ch := l.applied.Load() >= rev, l.advanced
		l.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("replog: %s waiting for revision %d (applied %d): %w", l.o.Name, rev, l.applied.Load(), ctx.Err())
		}
	}
}

// Revision is the revision of the log's newest entry now (0: the log is
// empty): a replica that applied it holds every entry appended before
// the call (read-your-writes with WaitApplied).
func (l *Log) Revision(ctx context.Context) (int64, error) {
	resp, err := l.o.Client.Get(ctx, l.logPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		return 0, fmt.Errorf("replog: revision: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return resp.Kvs[0].ModRevision, nil
}

// Bind sets the writer the entries are applied to; call it once, before
// Run, with the writer opened with Sink: l. Only SQLite is replicated (a
// MySQL history is shared by the replicas already).
func (l *Log) Bind(w *trace.Writer) error {
	if w.Dialect() != "sqlite" {
		return fmt.Errorf("replog: the replicated history applies to SQLite, not %s (a MySQL history is shared already)", w.Dialect())
	}
	l.w = w
	return nil
}

func (l *Log) logPrefix() string         { return l.o.Prefix + "/log/" }
func (l *Log) ackPrefix() string         { return l.o.Prefix + "/ack/" }
func (l *Log) floorKey() string          { return l.o.Prefix + "/floor" }
func (l *Log) ackKey(name string) string { return l.ackPrefix() + name }

// Applied is the revision up to which this replica's database holds
// every entry.
func (l *Log) Applied() int64 { return l.applied.Load() }

// Publish appends a batch to the log: one entry (one etcd put, its own
// revision) per MaxEntryBytes of encoded events, compressed (entry.go). Entries are ordered by
// their revision; a retried batch is appended again, which is harmless
// (rows are idempotent by ID).
func (l *Log) Publish(ctx context.Context, evs []trace.Event) error {
	for len(evs) > 0 {
		n := len(evs)
		var b []byte
		for {
			var err error
			if b, err = trace.MarshalEvents(evs[:n]); err != nil {
				return err
			}
			if len(b) <= l.o.MaxEntryBytes || n == 1 {
				break
			}
			n = max(1, n*l.o.MaxEntryBytes/len(b)) // fewer: len(b) > MaxEntryBytes
		}
		v, err := encodeEntry(b)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("%s%s-%s-%012d", l.logPrefix(), l.o.Name, l.boot, l.seq.Add(1))
		start := l.o.Clock.Now()
		if _, err := l.o.Client.Put(ctx, key, string(v)); err != nil {
			return fmt.Errorf("replog: append: %w", err)
		}
		l.m.commit.Observe(l.o.Clock.Now().Sub(start).Seconds())
		l.m.published.Add(float64(n))
		evs = evs[n:]
	}
	return nil
}

// Open starts a replica's replicated history: the Log of o, the trace
// writer of w with the Log as its Sink (w.Sink is set here), bound
// together. Run the Log (l.Run(ctx)) for as long as the scheduler runs;
// close the writer after Run returned.
func Open(ctx context.Context, o Options, w trace.Options) (*Log, *trace.Writer, error) {
	l, err := New(o)
	if err != nil {
		return nil, nil, err
	}
	w.Sink = l
	tw, err := trace.Open(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	if err := l.Bind(tw); err != nil {
		tw.Close(ctx)
		return nil, nil, err
	}
	return l, tw, nil
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ejcloud/elasticjob/store"
)

var (
	_ store.KV         = (*Store)(nil)
	_ store.Revisioned = (*Store)(nil)
	_ store.Reporter   = (*Store)(nil)
)

// DefaultPrefix is where the store's keys live when Options.Prefix is empty.
const DefaultPrefix = "/elasticjob-cloud"

// DefaultMaxTxnOps is etcd's default cap on the operations of one
// transaction (--max-txn-ops).
const DefaultMaxTxnOps = 128

// EmbeddedMaxTxnOps is the cap the scheduler's own members run with
// (MemberConfig.MaxTxnOps, and Options.MaxTxnOps of a store on them):
// big enough that the scheduler's routine commits are one flat
// transaction with a compare per node they rely on. A fire instant
// commits one entry per job firing at it (1,667 at 100,000 jobs whose
// crons spread over the minute; a catch-up more), and a commit past
// etcd's 128 is guarded: conditional on the guard key that every commit
// moves, it loses to any commit that lands between its read and its
// send, then takes the guard for itself (a lease grant, a lock, a revoke:
// three more quorum writes) while every other commit waits. Measured at
// 10,000 jobs (load 10-13): per 3,600 flat commits, 44 guarded
// transactions, 15 locks and 643 commits waiting behind them, an average
// commit of 350 ms. A flat commit of a few thousand compares costs etcd
// one index lookup each, in the apply it makes anyway. External clusters
// keep their own --max-txn-ops (Options.MaxTxnOps).
const EmbeddedMaxTxnOps = 8192

// DefaultMaxRequestBytes stays below etcd's default request cap
// (--max-request-bytes, 1.5 MiB) with room for the request's framing.
const DefaultMaxRequestBytes = 1536*1024 - 32*1024

// Options configure Open.
type Options struct {
	// Endpoints of the cluster's members ("http://127.0.0.1:2379"); used
	// when Client is nil.
	Endpoints []string
	// Client is an existing client to use instead of dialling Endpoints;
	// Close leaves it open.
	Client *clientv3.Client
	// Member is the scheduler's own member: the store's reads, commits,
	// watches and leases go to it in-process (function calls into its
	// server: no gRPC framing, no protobuf encoding of requests and
	// answers, which were a fifth to a quarter of a commit's CPU in
	// BenchmarkLaunchCommit). The calls that address a member by its URL
	// (status, defragmentation) go through a client dialled to
	// Endpoints (the member's client URL when empty). Its server's
	// gRPC interceptors are skipped: a call on a member without a raft
	// leader waits (bounded by its context) instead of failing at once.
	Member *Member
	// Prefix of every key of the store (DefaultPrefix when empty): one
	// etcd cluster can hold several stores under different prefixes.
	Prefix string
	// MaxTxnOps is the server's --max-txn-ops (DefaultMaxTxnOps when 0).
	// A commit bigger than one transaction can hold is nested or chained
	// (see the package doc).
	MaxTxnOps int
	// MaxRequestBytes bounds the bytes of one transaction
	// (DefaultMaxRequestBytes when 0); keep it below the server's
	// --max-request-bytes.
	MaxRequestBytes int
	// DialTimeout bounds the first connection (5 s when 0).
	DialTimeout time.Duration
	// Logger gets the store's warnings (discarded when nil).
	Logger *slog.Logger
	// LocalPlans plans each commit from a serializable read of the one
	// member the client talks to (what it has applied), instead of a
	// linearizable one, which waits for the raft leader to confirm its
	// leadership with a quorum and for the member to catch up: a round
	// trip through raft saved per commit. The transaction's compares
	// still decide, as they do when another writer overtakes a fresh
	// snapshot (they fail and the commit is planned again, from a fresh
	// read); a commit the local snapshot alone would decide (an op that
	// fails, nothing to write) is planned again from a fresh read first.
	// For a client with one endpoint (the scheduler's own member): reads
	// at the snapshot's revision must reach the member that fixed it.
	LocalPlans bool
}

// Store is a store.KV on etcd. It is safe for concurrent use.
type Store struct {
	cli    *clientv3.Client
	own    bool             // Close closes the client Open dialled
	byURL  *clientv3.Client // with Options.Member: the dialled client (urlClient); cli is in-process
	member *Member          // Options.Member
	// renewals' client of the raft leader's member (lease.go), and its URLs
	leaseMu  sync.Mutex
	leaseCli *clientv3.Client
	leaseAt  string
	k        keys
	maxOps   int
	maxBytes int
	log      *slog.Logger
	// localPlans: commits are planned from the member's applied state
	// (Options.LocalPlans).
	localPlans bool

	ctx    context.Context // cancelled by Close: ends every watch
	cancel context.CancelFunc
	mu     sync.Mutex // orders a Watch's start against Close
	closed atomic.Bool
	wg     sync.WaitGroup // watch pumps

	afterChunk func(i int)  // tests: called after link i of a chained commit
	lagAt      func() int64 // tests: the revision a local snapshot is read at (a member that lags)

	commitSeconds prometheus.Histogram   // Commit's duration (metrics.go)
	shapes        *prometheus.CounterVec // Commit's transactions by shape (metrics.go)
}

// Open connects to the cluster and returns the store.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.MaxTxnOps <= 0 {
		o.MaxTxnOps = DefaultMaxTxnOps
	}
	if o.MaxTxnOps < 4 {
		return nil, fmt.Errorf("etcd store: MaxTxnOps %d: want at least 4", o.MaxTxnOps)
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Member != nil && len(o.Endpoints) == 0 {
		o.Endpoints = o.Member.Endpoints()
	}
	if o.LocalPlans && o.Client == nil && o.Member == nil && len(o.Endpoints) != 1 {
		return nil, fmt.Errorf("etcd store: LocalPlans needs one endpoint (the member a snapshot is read from), have %d", len(o.Endpoints))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Store{cli: o.Client, k: newKeys(o.Prefix), maxOps: o.MaxTxnOps, maxBytes: o.MaxRequestBytes,
		localPlans: o.LocalPlans, log: o.Logger.With("subsystem", "etcdstore"), commitSeconds: newCommitHistogram(), shapes: newShapeCounter()}
	if s.cli == nil {
		if len(o.Endpoints) == 0 {
			return nil, errors.New("etcd store: no endpoints")
		}
		// Keepalives find a member that died without closing its
		// connections (a lost host), so the client moves to another.
		cli, err := clientv3.New(clientv3.Config{Endpoints: o.Endpoints, DialTimeout: o.DialTimeout,
			DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: 5 * time.Second,
			Context: context.WithoutCancel(ctx), Logger: quietZap()})
		if err != nil {
			return nil, fmt.Errorf("etcd store: connect %s: %w: %w", strings.Join(o.Endpoints, ","), store.ErrUnavailable, err)
		}
		s.cli, s.own = cli, true
	}
	if o.Member != nil {
		s.byURL, s.cli, s.member = s.cli, o.Member.inProcess(), o.Member
	}
	// One linearizable read proves the cluster answers (it has a leader).
	rctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	if _, err := s.cli.Get(rctx, s.k.guard); err != nil {
		eps := o.Endpoints
		if len(eps) == 0 {
			eps = s.cli.Endpoints()
		}
		s.closeClients()
		return nil, fmt.Errorf("etcd store: first read from %s: %w: %w", strings.Join(eps, ","), store.ErrUnavailable, err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Client is the store's etcd client (in-process with Options.Member).
func (s *Store) Client() *clientv3.Client { return s.cli }

// NodeKey is the etcd key of the node at store path p, and ChildrenKey the
// range prefix of its direct children (the key scheme of key.go): for
// what works on the store's keys with the client itself, the election on
// etcd (package election/etcd) among them.
func (s *Store) NodeKey(p string) string { return s.k.node(p) }

// ChildrenKey: see NodeKey.
func (s *Store) ChildrenKey(p string) string { return s.k.children(p) }

// Read is a Get of the client tried again, as the store's own reads are,
// while it fails for a reason that passes (a leader change or election, a
// member gone; at most readAttempts tries).
func (s *Store) Read(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return s.get(ctx, key, opts...)
}

// urlClient is the client for calls that address a member by its URL
// (Status, Defragment): an in-process client answers them from its own
// member whatever the URL.
func (s *Store) urlClient() *clientv3.Client {
	if s.byURL != nil {
		return s.byURL
	}
	return s.cli
}

// closeClients closes what the store opened: the in-process client of
// Options.Member and the client it dialled.
func (s *Store) closeClients() error {
	s.closeLeaseClient()
	var err error
	if s.byURL != nil {
		_ = s.cli.Close()
		if s.own {
			err = s.byURL.Close()
		}
		return err
	}
	if s.own {
		err = s.cli.Close()
	}
	return err
}

// Close ends every watch (their channels are closed) and, when Open
// dialled it, the client. Later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return fmt.Errorf("etcd store: close: %w", store.ErrClosed)
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return s.closeClients()
}

// ready checks that the store is open and p is a valid path.
func (s *Store) ready(op, p string) error {
	if s.closed.Load() {
		return fmt.Errorf("etcd store %s %s: %w", op, p, store.ErrClosed)
	}
	if err := store.ValidatePath(p); err != nil {
		return fmt.Errorf("etcd store %s: %w", op, err)
	}
	return nil
}

// fail wraps an error of the client: the caller's context, a closed
// store, or an unreachable cluster (store.ErrUnavailable).
func (s *Store) fail(ctx context.Context, op, p string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("etcd store %s %s: %w", op, p, ctx.Err())
	case s.closed.Load():
		return fmt.Errorf("etcd store %s %s: %w", op, p, store.ErrClosed)
	}
	return fmt.Errorf("etcd store %s %s: %w: %w", op, p, store.ErrUnavailable, err)
}

// Get returns the node at path. The root "/" always exists (version 0).
func (s *Store) Get(ctx context.Context, path string) (store.Node, error) {
	n, _, err := s.GetAt(ctx, path)
	return n, err
}

// GetAt is Get with the revision it read at (store.Revisioned).
func (s *Store) GetAt(ctx context.Context, path string) (store.Node, int64, error) {
	if err := s.ready("get", path); err != nil {
		return store.Node{}, 0, err
	}
	if path == "/" {
		rev, err := s.Revision(ctx)
		return store.Node{Path: "/"}, rev, err
	}
	resp, err := s.get(ctx, s.k.node(path))
	if err != nil {
		return store.Node{}, 0, s.fail(ctx, "get", path, err)
	}
	rev := resp.Header.Revision
	if len(resp.Kvs) == 0 {
		return store.Node{}, rev, fmt.Errorf("etcd store get %s: %w", path, store.ErrNotFound)
	}
	v, val, err := decode(resp.Kvs[0].Value)
	if err != nil {
		return store.Node{}, 0, fmt.Errorf("etcd store get %s: %w", path, err)
	}
	return store.Node{Path: path, Value: val, Version: v}, rev, nil
}

// Revision is the store's current revision (store.Revisioned): a
// linearizable read of the guard key, keys only.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.ready("revision", "/"); err != nil {
		return 0, err
	}
	resp, err := s.get(ctx, s.k.guard, clientv3.WithKeysOnly())
	if err != nil {
		return 0, s.fail(ctx, "revision", "/", err)
	}
	return resp.Header.Revision, nil
}

// Children returns the sorted names of path's direct children: one range
// read of exactly those keys (keys only).
func (s *Store) Children(ctx context.Context, path string) ([]string, error) {
	if err := s.ready("children", path); err != nil {
		return nil, err
	}
	pre := s.k.children(path)
	resp, err := s.get(ctx, pre, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, s.fail(ctx, "children", path, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	names := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		names[i] = string(kv.Key[len(pre):])
	}
	return names, nil // etcd returns a range in key order: name order here
}

// List returns path's direct children with their values, sorted by path.
func (s *Store) List(ctx context.Context, path string) ([]store.Node, error) {
	if err := s.ready("list", path); err != nil {
		return nil, err
	}
	pre := s.k.children(path)
	resp, err := s.get(ctx, pre, clientv3.WithPrefix())
	if err != nil {
		return nil, s.fail(ctx, "list", path, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	out := make([]store.Node, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		v, val, err := decode(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("etcd store list %s: %s: %w", path, kv.Key, err)
		}
		out[i] = store.Node{Path: store.Join(path, string(kv.Key[len(pre):])), Value: val, Version: v}
	}
	return out, nil
}

// readAttempts bounds the tries of a read that failed for a leader
// change or a lost member; reads are safe to send again, and an election
// (the timers: about a second) should not fail them.
const readAttempts = 12

// transient reports whether a read failed for a reason that passes:
// the leader changed or is being elected, or the member went away (the
// client then tries another endpoint).
func transient(err error) bool {
	switch {
	case errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrNoLeader),
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail), errors.Is(err, rpctypes.ErrTimeout),
		errors.Is(err, rpctypes.ErrStopped), errors.Is(err, rpctypes.ErrNotCapable):
		return true
	}
	return status.Code(err) == codes.Unavailable
}

// retryRead runs a read until it succeeds, fails for good, or has failed
// readAttempts times for passing reasons (waiting 50 ms, doubling to
// 800 ms, between tries).
func retryRead[T any](ctx context.Context, read func() (T, error)) (T, error) {
	wait := 50 * time.Millisecond
	for i := 1; ; i++ {
		v, err := read()
		if err == nil || !transient(err) || i == readAttempts || ctx.Err() != nil {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(2*wait, 800*time.Millisecond)
	}
}

func (s *Store) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return retryRead(ctx, func() (*clientv3.GetResponse, error) { return s.cli.Get(ctx, key, opts...) })
}

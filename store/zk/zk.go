package zk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/store"
)

var _ store.KV = (*Store)(nil)

// DefaultNamespace is the znode under which the store keeps its tree.
const DefaultNamespace = "elasticjob-cloud"

// Options configure Open. Servers is required; the rest have defaults.
type Options struct {
	Servers        []string      // "host:port" of the ensemble
	Namespace      string        // root znode (no leading slash); default DefaultNamespace
	Digest         string        // "user:password" for digest auth; empty: world ACL
	SessionTimeout time.Duration // default 15s
	Logger         *slog.Logger  // default slog.Default()
}

// Store is a store.KV on ZooKeeper.
type Store struct {
	conn   *zk.Conn
	urgent *zk.Conn // the urgent commits' session (urgent.go); nil: conn
	root   string   // znode of the store root, e.g. "/elasticjob-cloud"
	acl    []zk.ACL
	log    *slog.Logger

	mu           sync.Mutex
	closed       bool
	trees        map[watcher]context.CancelFunc
	listeners    map[int]func(zk.Event) // session state listeners (Session.OnState)
	nextListener int
	chains       map[string]int32 // chain node → its version as the last CommitChain left it (chain.go)

	sendMu     sync.Mutex // guards sendQ and sending (multi.go)
	sendQ      []outgoing
	sending    bool
	maxPending int // events a watch holds for its consumer: maxPending unless a test sets it
}

// Open connects, waits for a session and makes sure the namespace znode
// exists.
func Open(ctx context.Context, o Options) (*Store, error) {
	if len(o.Servers) == 0 {
		return nil, errors.New("zk store: open: no servers")
	}
	ns := strings.Trim(o.Namespace, "/")
	if ns == "" {
		ns = DefaultNamespace
	}
	if err := store.ValidatePath("/" + ns); err != nil {
		return nil, fmt.Errorf("zk store: open: namespace: %w", err)
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Store{root: "/" + ns, log: o.Logger, trees: map[watcher]context.CancelFunc{},
		acl: zk.WorldACL(zk.PermAll)}
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout,
		zk.WithLogger(zkLogger{o.Logger}), zk.WithLogInfo(false), zk.WithEventCallback(s.onEvent))
	if err != nil {
		return nil, fmt.Errorf("zk store: connect %v: %w", o.Servers, err)
	}
	s.conn = conn
	fail := func(err error) (*Store, error) { conn.Close(); return nil, err }
	if err := s.waitSession(ctx); err != nil {
		return fail(fmt.Errorf("zk store: connect %v: %w", o.Servers, err))
	}
	if o.Digest != "" {
		if !strings.Contains(o.Digest, ":") {
			return fail(errors.New("zk store: open: digest must be user:password"))
		}
		if err := conn.AddAuth("digest", []byte(o.Digest)); err != nil {
			return fail(fmt.Errorf("zk store: digest auth: %w", err))
		}
		s.acl = zk.AuthACL(zk.PermAll)
	}
	if err := s.ensure(ctx, s.root); err != nil {
		return fail(fmt.Errorf("zk store: create namespace %s: %w", s.root, err))
	}
	s.openUrgent(ctx, o)
	return s, nil
}

func (s *Store) waitSession(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// ensure creates znode p and its missing ancestors (mkdir -p).
func (s *Store) ensure(ctx context.Context, p string) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		// Exists first: creating an existing node under a parent we may not
		// write fails with ErrNoAuth rather than ErrNodeExists.
		ok, err := call(ctx, func() (bool, error) { ok, _, err := s.conn.Exists(p[:i]); return ok, err })
		if err == nil && !ok {
			_, err = call(ctx, func() (string, error) { return s.conn.Create(p[:i], nil, 0, s.acl) })
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// zpath maps a store path to its znode.
func (s *Store) zpath(p string) string {
	if p == "/" {
		return s.root
	}
	return s.root + p
}

// spath maps a znode under the root back to a store path.
func (s *Store) spath(z string) (string, bool) {
	if z == s.root {
		return "/", true
	}
	if strings.HasPrefix(z, s.root+"/") {
		return z[len(s.root):], true
	}
	return "", false
}

func (s *Store) check(p string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return store.ErrClosed
	}
	return store.ValidatePath(p)
}

// Get returns the node at path.
func (s *Store) Get(ctx context.Context, path string) (store.Node, error) {
	if err := s.check(path); err != nil {
		return store.Node{}, fmt.Errorf("zk store get %q: %w", path, err)
	}
	n, err := s.get(ctx, path)
	if err != nil {
		return store.Node{}, opErr("get", path, err)
	}
	return n, nil
}

func (s *Store) get(ctx context.Context, path string) (store.Node, error) {
	n, _, err := s.getStat(ctx, path)
	return n, err
}

// getStat reads path's node and how many children it has.
func (s *Store) getStat(ctx context.Context, path string) (store.Node, int32, error) {
	type res struct {
		data []byte
		st   *zk.Stat
	}
	r, err := call(ctx, func() (res, error) {
		d, st, err := s.conn.Get(s.zpath(path))
		return res{d, st}, err
	})
	if err != nil {
		return store.Node{}, 0, err
	}
	return store.Node{Path: path, Value: value(r.data), Version: int64(r.st.Version)}, r.st.NumChildren, nil
}

// Children returns the sorted names of path's children.
func (s *Store) Children(ctx context.Context, path string) ([]string, error) {
	if err := s.check(path); err != nil {
		return nil, fmt.Errorf("zk store children %q: %w", path, err)
	}
	names, err := call(ctx, func() ([]string, error) {
		n, _, err := s.conn.Children(s.zpath(path))
		return n, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, opErr("children", path, err)
	}
	slices.Sort(names)
	return names, nil
}

// listConcurrency bounds the Gets in flight for one List.
const listConcurrency = 16

// List returns path's children with their values, sorted by path. Children
// deleted between the listing and their read are left out.
func (s *Store) List(ctx context.Context, path string) ([]store.Node, error) {
	names, err := s.Children(ctx, path)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	nodes := make([]store.Node, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, listConcurrency)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			nodes[i], errs[i] = s.get(ctx, store.Join(path, name))
		})
	}
	wg.Wait()
	out := nodes[:0]
	for i, n := range nodes {
		switch {
		case errors.Is(errs[i], zk.ErrNoNode):
		case errs[i] != nil:
			return nil, opErr("list", store.Join(path, names[i]), errs[i])
		default:
			out = append(out, n)
		}
	}
	return out, nil
}

// Close ends all watches and the session.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.closed = true
	cancels := make([]context.CancelFunc, 0, len(s.trees))
	for _, c := range s.trees {
		cancels = append(cancels, c)
	}
	s.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	s.conn.Close()
	if s.urgent != nil {
		s.urgent.Close()
	}
	return nil
}

// call runs a blocking client call, giving up (and leaving the call to
// finish in the background) when ctx is done.
func call[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// opErr wraps a client error with the operation and path, translating the
// ZooKeeper errors that have a store sentinel.
func opErr(op, path string, err error) error {
	if sentinel := sentinelOf(err); sentinel != nil {
		return fmt.Errorf("zk store %s %s: %w (%w)", op, path, sentinel, err)
	}
	return fmt.Errorf("zk store %s %s: %w", op, path, err)
}

func sentinelOf(err error) error {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return store.ErrNotFound
	case errors.Is(err, zk.ErrNodeExists):
		return store.ErrExists
	case errors.Is(err, zk.ErrBadVersion):
		return store.ErrConflict
	case errors.Is(err, zk.ErrInvalidPath):
		return store.ErrBadPath
	case errors.Is(err, zk.ErrClosing):
		return store.ErrClosed
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionMoved), isNetError(err):
		return store.ErrUnavailable
	}
	return nil
}

// isNetError reports a failure of the connection itself (the client
// passes the socket's error on, e.g. "write: broken pipe").
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// value normalises empty data to nil (ancestors are "value nil").
func value(d []byte) []byte {
	if len(d) == 0 {
		return nil
	}
	return d
}

type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "subsystem", "zk")
}

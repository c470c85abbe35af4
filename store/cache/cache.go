package cache

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

var (
	_ store.KV      = (*KV)(nil)
	_ store.Chainer = (*KV)(nil)
)

// stripes is the number of per-path locks of a root. A re-read holds its
// path's lock over the read (re-reads of one path are serialised), so
// the stripes bound the re-reads in flight: with 16, a standby on
// ZooKeeper read at most 16 changed nodes at a time and fell seconds
// behind a leader writing 2,300 changes a second (p50 3.4 s in the
// simulated cluster); eventReadParallel is the bound meant.
const stripes = 1024

// KV is a store.KV whose reads of the mirrored roots come from memory.
type KV struct {
	strict bool
	back   store.KV
	rv     store.Revisioned // back, when its events carry their change (revision.go)
	roots  []*root
	hub    *memory.Hub
	log    *slog.Logger
	seed   maphash.Seed

	mu      sync.RWMutex // guards nodes, closed and waiters
	nodes   map[string]*node
	closed  bool
	pending map[string]map[*pending]struct{} // path → commits in flight (StrictWatch)
	// inflight counts the commits in flight through this cache that write
	// each path; settled is closed (and replaced) when one ends (inflight.go).
	inflight map[string]int
	settled  chan struct{}

	cancel context.CancelFunc
	runCtx context.Context // ends at Close
	wg     sync.WaitGroup

	lag atomic.Pointer[func(time.Duration)] // ObserveLag
}

// ObserveLag has f told, for every change the backing store's watch
// reports with its arrival time (store.Event.At: ZooKeeper), how long
// after its arrival the copy reflected it and its watchers were told:
// the copy's lag behind the store, as far as this process can see it.
func (c *KV) ObserveLag(f func(time.Duration)) { c.lag.Store(&f) }

// node is one cached node; kids are the names of its children (nil: none).
type node struct {
	value   []byte
	version int64
	kids    *kidSet
}

// root is one mirrored subtree.
type root struct {
	path  string
	scan  sync.RWMutex // held for writing while a re-read subtree replaces the copy
	locks [stripes]sync.Mutex
	// touched, while a rescan reads the subtree, collects the paths written
	// into the copy meanwhile (guarded by KV.mu).
	touched map[string]struct{}
	// Guarded by KV.mu (revision.go): every change up to passed is in the
	// copy; events up to fence take the read path; holds are the states
	// written by commits and re-reads, with their revisions.
	passed, fence int64
	holds         map[string]hold
	holdq         []holdAt
}

// Options configure Open.
type Options struct {
	// Roots are the mirrored subtrees (default: the whole tree, "/").
	Roots  []string
	Logger *slog.Logger
	// StrictWatch makes Commit also wait until the backing store's events
	// of what it wrote have been passed on, so a Watch begun after Commit
	// returns never reports them: the store.KV contract to the letter, at
	// the cost of a watch round trip per commit. Without it (the default)
	// such a watcher may also hear of changes committed through this cache
	// just before it began watching; the registry's consumers treat every
	// event as "re-read this path", so an early event costs them a re-read.
	StrictWatch bool
}

// Open mirrors opts.Roots of back and returns once the copy is loaded. The
// cache owns back: Close closes it.
func Open(ctx context.Context, back store.KV, opts Options) (*KV, error) {
	if len(opts.Roots) == 0 {
		opts.Roots = []string{"/"}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	rv, _ := back.(store.Revisioned)
	c := &KV{strict: opts.StrictWatch, back: back, rv: rv, hub: memory.NewHub(memory.DefaultQueue), log: opts.Logger, seed: maphash.MakeSeed(),
		nodes: map[string]*node{"/": {}}, pending: map[string]map[*pending]struct{}{},
		inflight: map[string]int{}, settled: make(chan struct{})}
	for _, p := range opts.Roots {
		if err := store.ValidatePath(p); err != nil {
			return nil, fmt.Errorf("cache: root: %w", err)
		}
		c.roots = append(c.roots, &root{path: p})
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel, c.runCtx = cancel, runCtx
	for _, r := range c.roots {
		ch, err := back.Watch(runCtx, r.path)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("cache: watch %s: %w", r.path, err)
		}
		if err := c.rescan(ctx, r); err != nil {
			cancel()
			return nil, fmt.Errorf("cache: load %s: %w", r.path, err)
		}
		c.start(runCtx, r, ch)
	}
	return c, nil
}

// rootOf returns the mirrored root holding p, or nil.
func (c *KV) rootOf(p string) *root {
	for _, r := range c.roots {
		if store.Under(p, r.path) {
			return r
		}
	}
	return nil
}

func (c *KV) check(op, p string) error {
	if err := store.ValidatePath(p); err != nil {
		return fmt.Errorf("cache %s: %w", op, err)
	}
	c.mu.RLock()
	closed := c.closed
	c.mu.RUnlock()
	if closed {
		return fmt.Errorf("cache %s %s: %w", op, p, store.ErrClosed)
	}
	return nil
}

// Get returns the node at path.
func (c *KV) Get(ctx context.Context, path string) (store.Node, error) {
	if err := c.check("get", path); err != nil {
		return store.Node{}, err
	}
	if c.rootOf(path) == nil {
		return c.back.Get(ctx, path)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.nodes[path]
	if n == nil {
		return store.Node{}, fmt.Errorf("cache get %s: %w", path, store.ErrNotFound)
	}
	return store.Node{Path: path, Value: n.value, Version: n.version}, nil
}

// Children returns the sorted names of path's children.
func (c *KV) Children(ctx context.Context, path string) ([]string, error) {
	if err := c.check("children", path); err != nil {
		return nil, err
	}
	if c.rootOf(path) == nil {
		return c.back.Children(ctx, path)
	}
	c.mu.Lock() // sortedKids may rebuild the order
	defer c.mu.Unlock()
	n := c.nodes[path]
	if n == nil || n.kidCount() == 0 {
		return nil, nil
	}
	return slices.Clone(n.sortedKids()), nil
}

// List returns path's children with their values, sorted by path.
func (c *KV) List(ctx context.Context, path string) ([]store.Node, error) {
	if err := c.check("list", path); err != nil {
		return nil, err
	}
	if c.rootOf(path) == nil {
		return c.back.List(ctx, path)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[path]
	if n == nil || n.kidCount() == 0 {
		return nil, nil
	}
	out := make([]store.Node, 0, n.kidCount())
	for _, name := range n.sortedKids() {
		p := store.Join(path, name)
		if k := c.nodes[p]; k != nil {
			out = append(out, store.Node{Path: p, Value: k.value, Version: k.version})
		}
	}
	return out, nil
}

// Commit applies ops in the backing store and returns once the copy and
// the cache's watchers reflect them: it re-reads every mirrored path the
// ops touched (also after a failure, so a lost race is seen at once) and,
// after a success, waits until the backing store's events of those paths
// have been passed on, so a Watch begun after Commit returns never reports
// them (bounded by waitEvents).
func (c *KV) Commit(ctx context.Context, ops ...store.Op) error {
	if err := c.check("commit", "/"); err != nil {
		return err
	}
	_, err := c.commitThrough(ctx, ops, func() (int, []store.Event, []int64, error) {
		var evs []store.Event
		var err error
		if c.rv != nil {
			var rev int64
			var err error
			if rep, ok := c.back.(store.Reporter); ok {
				// Events at the commit's revision (store/etcd): the
				// versions of blind puts without a read back. A commit
				// that wrote nothing reports none (and no revision).
				if evs, err = rep.CommitReport(ctx, ops...); len(evs) > 0 {
					rev = evs[len(evs)-1].Revision
				}
			} else {
				rev, err = c.rv.CommitAt(ctx, ops...)
			}
			if err != nil {
				return 0, nil, nil, err
			}
			revs := make([]int64, len(ops))
			for i := range revs {
				revs[i] = rev
			}
			return len(ops), evs, revs, nil
		}
		if rep, ok := c.back.(store.HintedReporter); ok {
			evs, err = rep.CommitReportHinted(ctx, c.hint, ops...)
		} else if rep, ok := c.back.(store.Reporter); ok {
			evs, err = rep.CommitReport(ctx, ops...)
		} else {
			err = c.back.Commit(ctx, ops...)
		}
		if err != nil {
			return 0, nil, nil, err
		}
		return len(ops), evs, nil, nil
	})
	return err
}

// CommitChain commits batches as a chain in the backing store
// (store.Chainer; store.CommitChain where the backing store is no
// Chainer) and, before returning, puts what the applied batches wrote
// into the copy, as Commit does, and re-reads what the failed ones
// touched.
func (c *KV) CommitChain(ctx context.Context, hint store.Hint, chain string, batches [][]store.Op) (int, [][]store.Event, error) {
	if err := c.check("commit", "/"); err != nil {
		return 0, nil, err
	}
	if hint == nil {
		hint = c.hint
	}
	var all []store.Op
	for _, b := range batches {
		all = append(all, b...)
	}
	var applied int
	var evs [][]store.Event
	_, err := c.commitThrough(ctx, all, func() (int, []store.Event, []int64, error) {
		var err error
		var brevs []int64 // each applied batch's revision (store.Revisioned)
		if c.rv != nil {
			rep, _ := c.back.(store.Reporter)
			applied, brevs, evs, err = commitChainAt(ctx, c.rv, rep, batches)
		} else {
			applied, evs, err = store.CommitChain(ctx, c.back, hint, chain, batches)
		}
		n := 0
		var done []store.Event
		var revs []int64
		for i := range applied {
			n += len(batches[i])
			if i < len(evs) {
				done = append(done, evs[i]...)
			}
			if brevs != nil {
				for range batches[i] {
					revs = append(revs, brevs[i])
				}
			}
		}
		return n, done, revs, err
	})
	return applied, evs, err
}

// commitThrough runs commit, which applies a prefix of ops in the backing
// store (how many, the events of those, and an error for the rest), and
// returns once the copy and the cache's watchers reflect them: it puts
// what the applied ops wrote into the copy, re-reads what it cannot know
// (blind puts without a reported version) and what the failed ops touched
// (so a lost race is seen at once) and, with StrictWatch, waits until the
// backing store's events of those paths have been passed on, so a Watch
// begun after Commit returns never reports them (bounded by waitEvents).
//
// revs, where the store gives them (store.Revisioned), is the revision of
// each applied op's commit: what the ops wrote is applied at it (revision.go).
func (c *KV) commitThrough(ctx context.Context, ops []store.Op, commit func() (int, []store.Event, []int64, error)) (int, error) {
	paths := make([]string, 0, len(ops))
	for _, op := range ops {
		if op.Kind != store.OpCheck {
			paths = append(paths, op.Path)
		}
	}
	var before map[string]bool
	var pd *pending
	if c.strict {
		before, pd = c.presence(paths), c.begin(paths)
		defer c.end(pd, paths)
	}
	c.fly(paths)
	landed := false
	defer func() {
		if !landed {
			c.land(paths)
		}
	}()
	n, evs, revs, err := commit()
	done := ops[:n]
	rctx := context.WithoutCancel(ctx)
	reread, apply := c.applyCommitted(done, revs) // what the ops wrote is known, but for blind puts
	reread = c.applyReported(reread, done, evs)
	if err != nil { // what the store holds now
		for _, op := range ops[n:] {
			if op.Kind != store.OpCheck {
				reread = append(reread, op.Path)
			}
		}
	}
	// The re-read outlives the caller's context (what landed must show in
	// the copy) but not rereadBound: a store without a quorum answers no
	// linearizable read, and a term stopping must not wait for one; what
	// is not re-read here comes through the watch.
	// A caller whose context ended (a term stopping) acts on nothing it
	// would show, and may commit again on its way out: shorter still.
	bound := rereadBound
	if ctx.Err() != nil {
		bound = rereadEnded
	}
	fctx, cancel := context.WithTimeout(rctx, bound)
	rerr := c.Refresh(fctx, reread...)
	cancel()
	if rerr != nil {
		c.log.Warn("cache: re-read after commit", "err", rerr)
	}
	apply()
	c.land(paths)
	landed = true
	var written []string
	for _, op := range done {
		if op.Kind != store.OpCheck {
			written = append(written, op.Path)
		}
	}
	noteCommitted(ctx, written)
	if c.strict && len(written) > 0 {
		c.awaitEvents(rctx, pd, written, before)
	}
	return n, err
}

// hint is the copy's belief about a mirrored path, for the backing
// store's planning of a commit (store.HintedReporter).
func (c *KV) hint(p string, withChildren bool) (exists bool, children []string, known bool) {
	if c.rootOf(p) == nil {
		return false, nil, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.nodes[p]
	if n == nil || !withChildren {
		return n != nil, nil, true
	}
	children = make([]string, 0, n.kidCount())
	n.eachKid(func(k string) { children = append(children, k) })
	return true, children, true
}

// presence records which paths the copy holds before a commit.
func (c *KV) presence(paths []string) map[string]bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]bool, len(paths))
	for _, p := range paths {
		out[p] = c.nodes[p] != nil
	}
	return out
}

// Watch reports changes of path's subtree once the copy reflects them.
func (c *KV) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	if err := c.check("watch", path); err != nil {
		return nil, err
	}
	if c.rootOf(path) == nil {
		for _, r := range c.roots {
			if store.Under(r.path, path) {
				return nil, fmt.Errorf("cache watch %s: it encloses the mirrored root %s: %w", path, r.path, store.ErrBadPath)
			}
		}
		return c.back.Watch(ctx, path)
	}
	ch, err := c.hub.Watch(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("cache watch %s: %w", path, err)
	}
	return ch, nil
}

// Close stops the workers and closes the backing store.
func (c *KV) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("cache close: %w", store.ErrClosed)
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.hub.Close()
	c.wg.Wait()
	return c.back.Close()
}

// Backing returns the store the cache mirrors.
func (c *KV) Backing() store.KV { return c.back }

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// KV is a store.KV whose reads of the mirrored roots come from memory.
// Its parts: the copy (tree.go), the backing store (source.go), the
// commits through it (commit.go, apply.go), the roots and their workers
// (root.go, follow.go), the commits in flight (inflight.go) and, with
// StrictWatch, those waiting for their events (strict.go).
type KV struct {
	strict  bool
	src     source
	roots   roots
	tree    *tree
	flights *flights
	waiters *waiters
	hub     *memory.Hub
	log     *slog.Logger

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
	c := &KV{strict: opts.StrictWatch, src: source{back: back, rv: rv}, tree: newTree(), flights: newFlights(), waiters: newWaiters(),
		hub: memory.NewHub(memory.DefaultQueue), log: opts.Logger}
	c.tree.flights = c.flights
	for _, p := range opts.Roots {
		if err := store.ValidatePath(p); err != nil {
			return nil, fmt.Errorf("cache: root: %w", err)
		}
		c.roots = append(c.roots, newRoot(p))
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
		f := follower{c: c, r: r}
		c.wg.Go(func() { f.work(runCtx, ch) })
	}
	return c, nil
}

func (c *KV) check(op, p string) error {
	if err := store.ValidatePath(p); err != nil {
		return fmt.Errorf("cache %s: %w", op, err)
	}
	if c.tree.isClosed() {
		return fmt.Errorf("cache %s %s: %w", op, p, store.ErrClosed)
	}
	return nil
}

// Get returns the node at path.
func (c *KV) Get(ctx context.Context, path string) (store.Node, error) {
	if err := c.check("get", path); err != nil {
		return store.Node{}, err
	}
	if c.roots.of(path) == nil {
		return c.src.back.Get(ctx, path)
	}
	n, ok := c.tree.get(path)
	if !ok {
		return store.Node{}, fmt.Errorf("cache get %s: %w", path, store.ErrNotFound)
	}
	return n, nil
}

// Children returns the sorted names of path's children.
func (c *KV) Children(ctx context.Context, path string) ([]string, error) {
	if err := c.check("children", path); err != nil {
		return nil, err
	}
	if c.roots.of(path) == nil {
		return c.src.back.Children(ctx, path)
	}
	return c.tree.children(path), nil
}

// List returns path's children with their values, sorted by path.
func (c *KV) List(ctx context.Context, path string) ([]store.Node, error) {
	if err := c.check("list", path); err != nil {
		return nil, err
	}
	if c.roots.of(path) == nil {
		return c.src.back.List(ctx, path)
	}
	return c.tree.list(path), nil
}

// Watch reports changes of path's subtree once the copy reflects them.
func (c *KV) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	if err := c.check("watch", path); err != nil {
		return nil, err
	}
	if c.roots.of(path) == nil {
		for _, r := range c.roots {
			if store.Under(r.path, path) {
				return nil, fmt.Errorf("cache watch %s: it encloses the mirrored root %s: %w", path, r.path, store.ErrBadPath)
			}
		}
		return c.src.back.Watch(ctx, path)
	}
	ch, err := c.hub.Watch(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("cache watch %s: %w", path, err)
	}
	return ch, nil
}

// Close stops the workers and closes the backing store.
func (c *KV) Close() error {
	if !c.tree.close() {
		return fmt.Errorf("cache close: %w", store.ErrClosed)
	}
	c.cancel()
	c.hub.Close()
	c.wg.Wait()
	return c.src.back.Close()
}

// Backing returns the store the cache mirrors.
func (c *KV) Backing() store.KV { return c.src.back }

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

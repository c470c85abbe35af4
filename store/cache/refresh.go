package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// rereadBound bounds Commit's re-read of what it cannot know from the
// commit itself (blind puts, failed ops). A store that lost its quorum
// (the last etcd members of a cluster stopping) never answers it, and the
// scheduler's stop (10 s for the leader's loops) must not wait for one.
const rereadBound = 3 * time.Second

// rereadEnded is rereadBound for a commit whose caller's context ended
// before the commit returned.
const rereadEnded = time.Second

// Refresh re-reads paths from the backing store into the copy. Paths
// outside the mirrored roots are ignored.
//
// A node found that the copy did not have is read again recheckAfter
// later: its creation is not reported yet, and ZooKeeper's watch never
// reports a node created and deleted between two of its listings (store/zk),
// so a node read just before its deletion would otherwise stay in the copy
// for good. A standby refreshes what a forwarded trigger wrote, and the
// leader may launch the run and delete the ready entry a millisecond later:
// the standby then showed a ready entry that no longer existed.
func (c *KV) Refresh(ctx context.Context, paths ...string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(paths))
	for i, p := range paths {
		r := c.roots.of(p)
		if r == nil {
			continue
		}
		one := func() error {
			revealed, err := c.refreshIn(ctx, r, p)
			if revealed {
				c.recheck(r, p)
			}
			return err
		}
		if len(paths) == 1 {
			return one()
		}
		wg.Go(func() { errs[i] = one() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// recheckAfter is how long after a Refresh a node it revealed is read
// again (see Refresh).
const recheckAfter = time.Second

// recheck reads p again recheckAfter from now (until Close).
func (c *KV) recheck(r *root, p string) {
	c.wg.Go(func() {
		t := time.NewTimer(recheckAfter)
		defer t.Stop()
		select {
		case <-c.runCtx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(c.runCtx, waitEvents)
		defer cancel()
		if _, err := c.refreshIn(ctx, r, p); err != nil {
			c.log.Warn("cache: second read of a refreshed node failed", "path", p, "err", err)
		}
	})
}

// RefreshAll re-reads every mirrored subtree.
func (c *KV) RefreshAll(ctx context.Context) error {
	for _, r := range c.roots {
		r.scan.Lock()
		err := c.rescanLocked(ctx, r)
		r.scan.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// refreshIn re-reads p under its stripe lock and applies what it finds;
// revealed: p was found and the copy did not have it.
func (c *KV) refreshIn(ctx context.Context, r *root, p string) (revealed bool, err error) {
	r.scan.RLock()
	defer r.scan.RUnlock()
	mu := r.lockOf(p)
	mu.Lock()
	defer mu.Unlock()
	n, rev, err := c.src.getAt(ctx, p)
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("cache: re-read %s: %w", p, err)
	}
	c.tree.mu.Lock()
	revealed = err == nil && c.tree.lookupLocked(p) == nil
	c.tree.putReadLocked(r, p, n, err == nil, rev)
	c.tree.mu.Unlock()
	return revealed, nil
}

// rescan replaces r's subtree with a fresh read of the backing store.
//
// The read of a large subtree takes long (on ZooKeeper a round trip per
// node), and commits go on meanwhile: they wait only for the swap. A path
// a commit (or a re-read) wrote into the copy during the read may have
// been read before that write, so the swap re-reads those paths: the
// writer keeps reading its own writes.
func (c *KV) rescan(ctx context.Context, r *root) error {
	c.tree.mu.Lock()
	r.touched = map[string]struct{}{}
	c.tree.mu.Unlock()
	fresh := map[string]store.Node{}
	fence, err := c.src.readFenced(ctx, r.path, fresh)
	r.scan.Lock()
	defer r.scan.Unlock()
	c.tree.mu.Lock()
	touched := r.touched
	r.touched = nil
	if err != nil {
		c.tree.mu.Unlock()
		return err
	}
	c.tree.swapLocked(r, fresh, fence)
	c.tree.mu.Unlock()
	return c.rereadLocked(ctx, r, touched)
}

// rescanLocked is rescan with r.scan held for writing all along.
func (c *KV) rescanLocked(ctx context.Context, r *root) error {
	fresh := map[string]store.Node{}
	fence, err := c.src.readFenced(ctx, r.path, fresh)
	if err != nil {
		return err
	}
	c.tree.mu.Lock()
	defer c.tree.mu.Unlock()
	c.tree.swapLocked(r, fresh, fence)
	return nil
}

// rereadLocked re-reads paths into the copy, readParallel at a time, with
// r.scan held for writing. Parents first, so a re-created node's parent is
// in place before it.
func (c *KV) rereadLocked(ctx context.Context, r *root, paths map[string]struct{}) error {
	if len(paths) == 0 {
		return nil
	}
	ps := slices.Sorted(maps.Keys(paths))
	nodes, revs, errs := make([]store.Node, len(ps)), make([]int64, len(ps)), make([]error, len(ps))
	forEach(len(ps), func(i int) { nodes[i], revs[i], errs[i] = c.src.getAt(ctx, ps[i]) })
	c.tree.mu.Lock()
	defer c.tree.mu.Unlock()
	for i, p := range ps {
		if errs[i] != nil && !isNotFound(errs[i]) {
			return fmt.Errorf("cache: re-read %s: %w", p, errs[i])
		}
		c.tree.putReadLocked(r, p, nodes[i], errs[i] == nil, revs[i])
	}
	return nil
}

// Barrier returns once the copy holds every change the backing store had
// made before Barrier was called, also those whose notifications are still
// queued: it writes value at marker (through commit, so the caller can
// fence the write) and waits until the backing store's own event of that
// write has been applied and passed on. A root's events are applied in
// their order, so every change notified before the marker's is in the copy
// by then. A resync in between (the copy re-read its subtree, and may have
// swallowed the marker's event) writes the marker again.
//
// A new leader calls it before it reads anything to act on: the previous
// leader's last writes may still be queued to its copy when the election
// hands it the term.
func (c *KV) Barrier(ctx context.Context, marker string, value []byte, commit func(context.Context, ...store.Op) error) error {
	if c.roots.of(marker) == nil {
		return fmt.Errorf("cache: barrier: %s is not under a mirrored root", marker)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.Watch(wctx, marker)
	if err != nil {
		return fmt.Errorf("cache: barrier: %w", err)
	}
	for {
		if err := commit(ctx, store.Put(marker, value)); err != nil {
			return fmt.Errorf("cache: barrier: write %s: %w", marker, err)
		}
		n, err := c.Get(ctx, marker)
		if err != nil {
			return fmt.Errorf("cache: barrier: read %s back: %w", marker, err)
		}
		if passed, err := awaitMarker(ctx, events, marker, n.Version); passed || err != nil {
			return err
		}
	}
}

// awaitMarker waits for the event of marker's version (true), or a resync
// (false: write it again).
func awaitMarker(ctx context.Context, events <-chan store.Event, marker string, version int64) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("cache: barrier: waiting for the event of %s: %w", marker, ctx.Err())
		case ev, ok := <-events:
			switch {
			case !ok:
				return false, fmt.Errorf("cache: barrier: the watch of %s ended", marker)
			case ev.Type == store.EventResync:
				return false, nil
			case ev.Path == marker && ev.Type == store.EventPut && ev.Version >= version:
				return true, nil
			}
		}
	}
}

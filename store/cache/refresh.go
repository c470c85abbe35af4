package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/internal/parallel"
	"github.com/ejcloud/elasticjob/store"
)

// resyncPause spaces out attempts to re-read a subtree that failed.
const resyncPause = 200 * time.Millisecond

// waitEvents bounds how long Commit waits for its own events to pass.
const waitEvents = 5 * time.Second

// rereadBound bounds Commit's re-read of what it cannot know from the
// commit itself (blind puts, failed ops). A store that lost its quorum
// (the last etcd members of a cluster stopping) never answers it, and the
// scheduler's stop (10 s for the leader's loops) must not wait for one.
const rereadBound = 3 * time.Second

// rereadEnded is rereadBound for a commit whose caller's context ended
// before the commit returned.
const rereadEnded = time.Second

// start runs the worker of r: it applies the backing events in their order
// and passes each on once the copy reflects it.
func (c *KV) start(ctx context.Context, r *root, events <-chan store.Event) {
	c.wg.Go(func() { c.work(ctx, r, events) })
}

// maxApply bounds the events a worker applies together; maxHeld the
// events it keeps while the subtree is re-read (beyond them it re-reads
// again afterwards).
const (
	maxApply = 4096
	maxHeld  = 1 << 20
)

func (c *KV) work(ctx context.Context, r *root, events <-chan store.Event) {
	batch := make([]store.Event, 0, maxApply)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() == nil {
					c.log.Error("cache: backing watch closed", "root", r.path)
				}
				return
			}
			batch = append(batch[:0], ev)
		more:
			for len(batch) < maxApply && ev.Type != store.EventResync {
				select {
				case ev, ok = <-events:
					if !ok {
						break more
					}
					batch = append(batch, ev)
				default:
					break more
				}
			}
			if c.applyBatch(ctx, r, batch) && !c.resyncFollowing(ctx, r, events) {
				if ctx.Err() == nil {
					c.log.Error("cache: backing watch closed", "root", r.path)
				}
				return
			}
		}
	}
}

// applyBatch brings the copy up to date with events, in their order, and
// passes them on. It reports whether the subtree must be re-read instead:
// a resync event (always the last of a batch), or a re-read that failed.
func (c *KV) applyBatch(ctx context.Context, r *root, events []store.Event) bool {
	if last := events[len(events)-1]; last.Type == store.EventResync {
		if len(events) > 1 && c.applyBatch(ctx, r, events[:len(events)-1]) {
			return true
		}
		c.log.Warn("cache: the backing watch missed events (its queue overflowed or it reconnected); re-reading the subtree",
			"root", r.path)
		return true
	}
	if err := c.applyRuns(ctx, r, events); err != nil {
		c.log.Warn("cache: re-read failed; re-reading the subtree", "err", err)
		return true // the resync announces the changes
	}
	if last := events[len(events)-1].Revision; last > 0 {
		c.mu.Lock()
		r.passLocked(last - 1) // the batch may end inside a commit's events
		c.mu.Unlock()
	}
	c.hub.Publish(events)
	lag := c.lag.Load()
	now := time.Now()
	for _, ev := range events {
		c.release(ev)
		if lag != nil && !ev.At.IsZero() {
			(*lag)(now.Sub(ev.At))
		}
	}
	return false
}

// resyncFollowing re-reads r's subtree and, meanwhile, keeps taking the
// backing watch's events (a large subtree on ZooKeeper takes a minute to
// read, and the watch's own queue would overflow into another resync); it
// applies them after the swap, in their order. It returns false when the
// watch ended.
func (c *KV) resyncFollowing(ctx context.Context, r *root, events <-chan store.Event) bool {
	for {
		start := time.Now()
		done := make(chan struct{})
		go func() { c.resync(ctx, r); close(done) }()
		var held []store.Event
		again, open := false, true
	wait:
		for {
			select {
			case <-done:
				break wait
			case ev, ok := <-events:
				switch {
				case !ok:
					open, events = false, nil // wait for the re-read to end
				case ev.Type == store.EventResync || len(held) >= maxHeld:
					held, again = nil, true // the next re-read covers them
				case !again:
					held = append(held, ev)
				}
			}
		}
		c.log.Info("cache: subtree re-read", "root", r.path, "took", time.Since(start).Round(time.Millisecond),
			"events_meanwhile", len(held))
		if !open || ctx.Err() != nil {
			return false
		}
		for len(held) > 0 && !again {
			n := min(len(held), maxApply)
			again = c.applyBatch(ctx, r, held[:n])
			held = held[n:]
		}
		if !again {
			return true
		}
		c.log.Warn("cache: the backing watch missed events during the re-read; re-reading the subtree again", "root", r.path)
	}
}

// applyRuns applies events in order: the runs that carry their change
// (revision.go) as they are told, the others by applyEvents.
func (c *KV) applyRuns(ctx context.Context, r *root, events []store.Event) error {
	if c.rv == nil {
		return c.applyEvents(ctx, r, events)
	}
	c.mu.RLock()
	fence := r.fence
	c.mu.RUnlock()
	valued := func(ev store.Event) bool { return ev.HasValue && ev.Revision > fence }
	for len(events) > 0 {
		v := valued(events[0])
		n := 1
		for n < len(events) && valued(events[n]) == v {
			n++
		}
		if v {
			behind := c.applyValues(r, events[:n])
			errs := make([]error, len(behind))
			parallel.For(len(behind), eventReadParallel, func(i int) { _, errs[i] = c.refreshIn(ctx, r, behind[i]) })
			if err := errors.Join(errs...); err != nil {
				return err
			}
		} else if err := c.applyEvents(ctx, r, events[:n]); err != nil {
			return err
		}
		events = events[n:]
	}
	return nil
}

// applyEvents brings the paths of events up to date, re-reading
// eventReadParallel paths at a time. The copy never goes back in time (re-reads
// of a path are serialised and read the current state), so an event the
// copy already reflects needs no read: a put of a version it holds or
// passed, a delete of a node it does not hold. A delete always precedes
// the put that re-creates a node, so a re-created node is read at its
// delete. A path's events in the batch are judged by the last of them (a
// node created and deleted since the last batch, which the copy does not
// hold, needs no read), except that a delete of a node the copy holds
// always means a read (the node may have been created again since); a
// path is read at most once: that read follows all of them.
func (c *KV) applyEvents(ctx context.Context, r *root, events []store.Event) error {
	type seen struct {
		last    store.Event
		deleted bool
	}
	paths := make(map[string]seen, len(events))
	for _, ev := range events {
		s := paths[ev.Path]
		s.last, s.deleted = ev, s.deleted || ev.Type == store.EventDelete
		paths[ev.Path] = s
	}
	staleOf := func(in func(yield func(string, seen) bool)) []string {
		var stale []string
		c.mu.RLock()
		defer c.mu.RUnlock()
		for p, s := range in {
			if !c.current(s.last, s.deleted) {
				stale = append(stale, p)
			}
		}
		return stale
	}
	stale := staleOf(func(yield func(string, seen) bool) {
		for p, s := range paths {
			if !yield(p, s) {
				return
			}
		}
	})
	if len(stale) > 0 { // a commit of this process in flight may be about to put them in the copy
		c.awaitLanded(ctx, stale)
		stale = staleOf(func(yield func(string, seen) bool) {
			for _, p := range stale {
				if !yield(p, paths[p]) {
					return
				}
			}
		})
	}
	errs := make([]error, len(stale))
	parallel.For(len(stale), eventReadParallel, func(i int) { _, errs[i] = c.refreshIn(ctx, r, stale[i]) })
	return errors.Join(errs...)
}

// resync re-reads r's subtree until it succeeds, then tells the watchers
// and releases every commit waiting for an event under r.
func (c *KV) resync(ctx context.Context, r *root) {
	for ctx.Err() == nil {
		err := c.rescan(ctx, r)
		if err == nil {
			c.hub.Publish([]store.Event{{Type: store.EventResync, Path: r.path}})
			c.releaseUnder(r.path)
			return
		}
		c.log.Warn("cache: re-read of the subtree failed", "root", r.path, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(resyncPause):
		}
	}
}

// pending is a commit in flight: it collects the events of its paths that
// are passed on from the moment it began, so none can slip by unseen.
type pending struct {
	mu       sync.Mutex
	seen     map[string][]store.Event
	resynced bool
	wake     chan struct{}
}

func (pd *pending) note(ev store.Event) {
	pd.mu.Lock()
	if ev.Type == store.EventResync {
		pd.resynced = true
	} else {
		pd.seen[ev.Path] = append(pd.seen[ev.Path], ev)
	}
	pd.mu.Unlock()
	select {
	case pd.wake <- struct{}{}:
	default:
	}
}

// begin registers a commit of paths before it is sent.
func (c *KV) begin(paths []string) *pending {
	pd := &pending{seen: map[string][]store.Event{}, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		if c.rootOf(p) == nil {
			continue
		}
		m := c.pending[p]
		if m == nil {
			m = map[*pending]struct{}{}
			c.pending[p] = m
		}
		m[pd] = struct{}{}
	}
	return pd
}

func (c *KV) end(pd *pending, paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		if m := c.pending[p]; m != nil {
			delete(m, pd)
			if len(m) == 0 {
				delete(c.pending, p)
			}
		}
	}
}

// release hands a passed-on event to the commits waiting on its path.
func (c *KV) release(ev store.Event) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for pd := range c.pending[ev.Path] {
		pd.note(ev)
	}
}

// releaseUnder tells every commit with a path under p that a resync
// replaced the events.
func (c *KV) releaseUnder(p string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for q, m := range c.pending {
		if store.Under(q, p) {
			for pd := range m {
				pd.note(store.Event{Type: store.EventResync, Path: p})
			}
		}
	}
}

// want is what a committed path waits for: a put of at least version, or
// a delete.
type want struct {
	del     bool
	version int64
}

// awaitEvents waits until the events of a successful commit's paths have
// been passed on (or waitEvents passed). The copy, re-read after the
// commit, says what to wait for: a put of at least the version it holds,
// or, for a path it no longer holds but held before, a delete. A path
// created and deleted by the same commit may make no event at all.
func (c *KV) awaitEvents(ctx context.Context, pd *pending, paths []string, before map[string]bool) {
	wants := map[string]want{}
	c.mu.RLock()
	for _, p := range paths {
		if c.rootOf(p) == nil {
			continue
		}
		if n := c.nodes[p]; n != nil {
			wants[p] = want{version: n.version}
		} else if before[p] {
			wants[p] = want{del: true}
		}
	}
	c.mu.RUnlock()
	t := time.NewTimer(waitEvents)
	defer t.Stop()
	for !pd.satisfied(wants) {
		select {
		case <-pd.wake:
		case <-t.C:
			c.log.Warn("cache: a commit's events did not arrive in time", "wait", waitEvents)
			return
		case <-ctx.Done():
			return
		}
	}
}

func (pd *pending) satisfied(wants map[string]want) bool {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.resynced {
		return true
	}
	for p, w := range wants {
		ok := false
		for _, ev := range pd.seen[p] {
			if (w.del && ev.Type == store.EventDelete) || (!w.del && ev.Type == store.EventPut && ev.Version >= w.version) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
		delete(wants, p)
	}
	return true
}

func (c *KV) stripe(p string) int {
	return int(hashString(c.seed, p) % stripes)
}

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
		r := c.rootOf(p)
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
	mu := &r.locks[c.stripe(p)]
	mu.Lock()
	defer mu.Unlock()
	n, rev, err := c.getAt(ctx, p)
	if err != nil && !isNotFound(err) {
		return false, fmt.Errorf("cache: re-read %s: %w", p, err)
	}
	c.mu.Lock()
	revealed = err == nil && c.nodes[p] == nil
	c.putReadAt(r, p, n, err == nil, rev)
	c.mu.Unlock()
	return revealed, nil
}

// putRead applies a read of p (found or not) to the copy; c.mu is held.
func (c *KV) putRead(r *root, p string, n store.Node, found bool) {
	r.touch(p)
	if found {
		c.setLocked(p, n.Value, n.Version)
	} else {
		c.removeLocked(p)
	}
}

// touch records that p was written into the copy while a rescan of r
// reads the subtree; c.mu is held.
func (r *root) touch(p string) {
	if r.touched != nil {
		r.touched[p] = struct{}{}
	}
}

// rescan replaces r's subtree with a fresh read of the backing store.
//
// The read of a large subtree takes long (on ZooKeeper a round trip per
// node), and commits go on meanwhile: they wait only for the swap. A path
// a commit (or a re-read) wrote into the copy during the read may have
// been read before that write, so the swap re-reads those paths: the
// writer keeps reading its own writes.
func (c *KV) rescan(ctx context.Context, r *root) error {
	c.mu.Lock()
	r.touched = map[string]struct{}{}
	c.mu.Unlock()
	fresh := map[string]store.Node{}
	fence, err := c.readFenced(ctx, r.path, fresh)
	r.scan.Lock()
	defer r.scan.Unlock()
	c.mu.Lock()
	touched := r.touched
	r.touched = nil
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.swapLocked(r, fresh, fence)
	c.mu.Unlock()
	return c.rereadLocked(ctx, r, touched)
}

// rescanLocked is rescan with r.scan held for writing all along.
func (c *KV) rescanLocked(ctx context.Context, r *root) error {
	fresh := map[string]store.Node{}
	fence, err := c.readFenced(ctx, r.path, fresh)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.swapLocked(r, fresh, fence)
	return nil
}

// readFenced is read, with the store's revision after it (0 where the
// store has none): the reads were made at revisions up to it.
func (c *KV) readFenced(ctx context.Context, p string, out map[string]store.Node) (int64, error) {
	if err := c.read(ctx, p, out); err != nil {
		return 0, err
	}
	if c.rv == nil {
		return 0, nil
	}
	rev, err := c.rv.Revision(ctx)
	if err != nil {
		return 0, fmt.Errorf("cache: read %s: revision: %w", p, err)
	}
	return rev, nil
}

// swapLocked replaces r's subtree in the copy by fresh, read at
// revisions up to fence; c.mu is held.
func (c *KV) swapLocked(r *root, fresh map[string]store.Node, fence int64) {
	r.resetLocked(fence)
	if r.path != "/" {
		c.removeLocked(r.path)
	} else {
		c.nodes = map[string]*node{"/": {}}
	}
	for p, n := range fresh {
		c.setLocked(p, n.Value, n.Version)
	}
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
	forEach(len(ps), func(i int) { nodes[i], revs[i], errs[i] = c.getAt(ctx, ps[i]) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range ps {
		if errs[i] != nil && !isNotFound(errs[i]) {
			return fmt.Errorf("cache: re-read %s: %w", p, errs[i])
		}
		c.putReadAt(r, p, nodes[i], errs[i] == nil, revs[i])
	}
	return nil
}

// readParallel bounds the reads of the backing store in flight while the
// cache reads a subtree.
const readParallel = 32

// eventReadParallel bounds the re-reads in flight of the paths a batch of
// events left stale. On ZooKeeper they go over the writer's own session,
// each waiting behind the multis queued before it, so their rate is what
// is in flight over that wait. In the simulated cluster a leader's
// short-lived nodes (running shards, ready entries, waiting reasons),
// created and deleted again before their events came, made a batch of
// 1,024 events re-read up to 500 paths, at up to 0.9 s a batch with 32 in
// flight: the consumer fell behind its watch until the watch gave up on
// it (a resync, and a re-read of all of /state).
const eventReadParallel = 256

// read collects p and its subtree into out (nothing if p is missing):
// with the backing store's Subtree where it has one, else one level at a
// time, the nodes of a level listed readParallel at once.
func (c *KV) read(ctx context.Context, p string, out map[string]store.Node) error {
	if sr, ok := c.back.(store.SubtreeReader); ok {
		nodes, err := sr.Subtree(ctx, p)
		if err != nil {
			return fmt.Errorf("cache: read %s: %w", p, err)
		}
		for _, n := range nodes {
			if n.Path != "/" {
				out[n.Path] = n
			}
		}
		return nil
	}
	if p != "/" {
		n, err := c.back.Get(ctx, p)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cache: read %s: %w", p, err)
		}
		out[p] = n
	}
	for level := []string{p}; len(level) > 0; {
		kids, errs := make([][]store.Node, len(level)), make([]error, len(level))
		forEach(len(level), func(i int) { kids[i], errs[i] = c.back.List(ctx, level[i]) })
		var next []string
		for i, q := range level {
			if errs[i] != nil {
				return fmt.Errorf("cache: read %s: %w", q, errs[i])
			}
			for _, k := range kids[i] {
				out[k.Path] = k
				next = append(next, k.Path)
			}
		}
		level = next
	}
	return nil
}

// forEach runs fn(0..n-1), readParallel at once.
func forEach(n int, fn func(i int)) { parallel.For(n, readParallel, fn) }

// setLocked stores a node, creating missing ancestors as empty nodes.
func (c *KV) setLocked(p string, value []byte, version int64) {
	if len(value) == 0 {
		value = nil
	}
	if n := c.nodes[p]; n != nil {
		n.value, n.version = value, version
		return
	}
	c.nodes[p] = &node{value: value, version: version}
	for child := p; child != "/"; {
		parent := store.Parent(child)
		pn := c.nodes[parent]
		created := pn == nil
		if created {
			pn = &node{}
			c.nodes[parent] = pn
		}
		pn.addKid(store.Base(child))
		if !created {
			return
		}
		child = parent
	}
}

// removeLocked drops p and its subtree.
func (c *KV) removeLocked(p string) {
	n := c.nodes[p]
	if n == nil || p == "/" {
		return
	}
	var drop func(string, *node)
	drop = func(q string, m *node) {
		m.eachKid(func(k string) {
			kp := store.Join(q, k)
			if km := c.nodes[kp]; km != nil {
				drop(kp, km)
			}
		})
		delete(c.nodes, q)
	}
	drop(p, n)
	if pn := c.nodes[store.Parent(p)]; pn != nil {
		pn.removeKid(store.Base(p))
	}
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
	if c.rootOf(marker) == nil {
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

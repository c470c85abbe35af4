package zk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/internal/parallel"
	"github.com/ejcloud/elasticjob/store"
)

const (
	maxPending   = 65_536  // undelivered events before they collapse into one EventResync (a launch round writes thousands)
	maxInbox     = 100_000 // unprocessed notifications before the tree is re-read
	outBuffer    = 1024    // buffer of the consumer's channel
	rescanPause  = 200 * time.Millisecond
	readParallel = 16 // concurrent reads while scanning a subtree
	// A directory with at least bigDir children is re-listed at most every
	// relistDelay, or relistShare times as long as its last listing took
	// (up to relistMax): each new child fires its parent's child watch, and
	// re-listing 10,000 names for every one of 10,000 registrations would
	// make registration quadratic; a listing of 100,000 names takes tens of
	// milliseconds, so this bounds the share of the watch's time listing
	// takes. Until the listing, later notifications wait, so events keep
	// the order of the notifications. Changes and deletes of known children
	// come through their own data watches.
	bigDir      = 256
	relistDelay = 20 * time.Millisecond
	relistShare = 4
	relistMax   = time.Second
	// Notifications are re-read aheadWindow at a time, aheadParallel
	// reads in flight (readAhead): a writer changes nodes faster than one
	// round trip per notification can follow.
	aheadWindow   = 1024
	aheadParallel = 64
)

// tree is one Watch: a copy of the subtree's versions kept current by
// one-shot watches that are re-armed as they fire.
type tree struct {
	s    *Store
	root string // store path
	out  chan store.Event

	inMu     sync.Mutex
	inbox    []zk.Event
	overflow bool
	wake     chan struct{}

	work       []item           // notifications, in order
	ahead      int              // items at the front of work that readAhead covered
	early      map[string]found // first reads of new nodes, done by readAhead for this window
	nodes      map[string]known // store path → last seen state
	kids       map[string]int   // directory → children at its last listing
	under      map[string]int   // path → nodes known below it (setNode, dropNode)
	relist     map[string]bool  // big directories whose child watch fired, re-listed at relistAt
	relistAt   time.Time
	listAfter  map[string]time.Time // big directory → when it may be listed again
	pending    []store.Event
	maxPending int  // maxPending, lower in tests
	lost       bool // connection lost since the last session
	needRescan bool
}

// item is a queued notification.
type item struct {
	ev  zk.Event
	pre *found // the notification's re-read, done ahead (readAhead)
}

// found is what one read of a node found: its stat (data reads) and its
// children (child listings).
type found struct {
	st   *zk.Stat
	kids []string
	err  error
}

type known struct {
	version int64
	czxid   int64 // tells a re-created node from the one we knew
	mzxid   int64
}

func knownOf(st *zk.Stat) known {
	return known{version: int64(st.Version), czxid: st.Czxid, mzxid: st.Mzxid}
}

// watcher is one Watch's receiver of the connection's notifications.
type watcher interface{ push(zk.Event) }

// Watch reports changes of path's subtree; see the package doc for how.
func (s *Store) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	if err := s.check(path); err != nil {
		return nil, fmt.Errorf("zk store watch %q: %w", path, err)
	}
	s.mu.Lock()
	oneShot := s.oneShot
	s.mu.Unlock()
	if !oneShot {
		ch, err := s.watchPersistent(ctx, path)
		if !errors.Is(err, errNoAddWatch) {
			return ch, err
		}
		s.log.Warn("watch: the server has no persistent watches (ZooKeeper before 3.6); keeping a watch on every node",
			"subsystem", "zkstore", "err", err)
		s.mu.Lock()
		s.oneShot = true
		s.mu.Unlock()
	}
	return s.watchOneShot(ctx, path)
}

// register adds w to the receivers of notifications, before its first
// read so that no notification is missed.
func (s *Store) register(w watcher, cancel context.CancelFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.trees[w] = cancel
	return nil
}

// watchOneShot is Watch on one-shot watches.
func (s *Store) watchOneShot(ctx context.Context, path string) (<-chan store.Event, error) {
	t := &tree{s: s, root: path, out: make(chan store.Event, outBuffer),
		wake: make(chan struct{}, 1), nodes: map[string]known{}, maxPending: maxPending}
	if s.maxPending > 0 {
		t.maxPending = s.maxPending
	}
	tctx, cancel := context.WithCancel(ctx)
	if err := s.register(t, cancel); err != nil {
		cancel()
		return nil, fmt.Errorf("zk store watch %s: %w", path, err)
	}
	if err := t.scan(tctx); err != nil {
		s.unregister(t)
		cancel()
		return nil, fmt.Errorf("zk store watch %s: %w", path, err)
	}
	t.pending = nil // the initial scan reports nothing
	go t.run(tctx)
	return t.out, nil
}

func (s *Store) unregister(t watcher) {
	s.mu.Lock()
	delete(s.trees, t)
	s.mu.Unlock()
}

// onEvent is the client's event callback. It runs on the client's receive
// loop, in server order, and must not block.
func (s *Store) onEvent(ev zk.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.trees {
		t.push(ev)
	}
	if ev.Type == zk.EventSession {
		for _, f := range s.listeners {
			f(ev)
		}
	}
}

func (t *tree) push(ev zk.Event) {
	if ev.Type != zk.EventSession && ev.Type != zk.EventNotWatching {
		p, ok := t.s.spath(ev.Path)
		if !ok || !store.Under(p, t.root) {
			return
		}
	}
	t.inMu.Lock()
	if len(t.inbox) >= maxInbox {
		t.overflow, t.inbox = true, nil
	}
	t.inbox = append(t.inbox, ev)
	t.inMu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *tree) run(ctx context.Context) {
	defer close(t.out)
	defer t.s.unregister(t)
	var retry <-chan time.Time
	relistT := time.NewTimer(time.Hour)
	defer relistT.Stop()
	for {
		var out chan store.Event
		var next store.Event
		if len(t.pending) > 0 {
			out, next = t.out, t.pending[0]
		}
		var relistC <-chan time.Time
		if len(t.relist) > 0 {
			relistT.Reset(max(time.Until(t.relistAt), 0))
			relistC = relistT.C
		}
		select {
		case <-ctx.Done():
			return
		case out <- next:
			t.pending = t.pending[1:]
			t.deliver()
			continue
		case <-t.wake:
		case <-retry:
			retry = nil
		case <-relistC:
			t.relistDue(ctx)
		}
		t.drain(ctx)
		if t.needRescan && !t.lost && ctx.Err() == nil {
			if err := t.rescan(ctx); err != nil {
				retry = time.After(rescanPause)
			}
		}
	}
}

// pull moves the queued notifications to the work queue. The server sends
// every notification of a change before the answer to any later read, so
// pulling right after a read queues everything that happened before it.
func (t *tree) pull() {
	t.inMu.Lock()
	evs, overflow := t.inbox, t.overflow
	t.inbox, t.overflow = nil, false
	t.inMu.Unlock()
	if overflow {
		t.s.log.Warn("watch: more notifications waited than it holds; re-reading the subtree",
			"subsystem", "zkstore", "root", t.root, "limit", maxInbox)
		t.needRescan = true
	}
	for _, ev := range evs {
		t.work = append(t.work, item{ev: ev})
	}
}

// drain applies the queued notifications and deferred reads.
func (t *tree) drain(ctx context.Context) {
	t.pull()
	for len(t.work) > 0 && len(t.relist) == 0 && ctx.Err() == nil { // a due listing holds what follows
		if t.ahead == 0 {
			t.readAhead(ctx)
		}
		it := t.work[0]
		t.work = t.work[1:]
		t.handle(ctx, it)
		t.deliver()
		if t.ahead--; t.ahead <= 0 {
			t.ahead, t.early = 0, nil // the window's reads are not used after it
		}
	}
}

// readAhead does, concurrently, the reads that the next aheadWindow
// notifications will need: the re-read of each changed node, the read of
// each deleted node's name (taken again, it is a new node: apply) and the
// listing of each small directory whose children changed, then the first
// read of the children those listings show as new (t.early). Handling a
// notification then uses its read instead of making it, which is the same
// as reading then: every read here follows every notification of the
// window (they were queued before it began), and each re-arms its watch,
// so a change after the read is notified again and handled after the
// window. Reads that handling does not use (a node forgotten in between)
// only arm a watch whose notification will be ignored. Only the first
// notification of a path in the window is read ahead.
func (t *tree) readAhead(ctx context.Context) {
	n := min(len(t.work), aheadWindow)
	t.ahead, t.early = n, nil
	if t.needRescan || t.lost {
		return
	}
	type key struct {
		typ  zk.EventType
		path string
	}
	var idx []int
	seen := map[key]bool{}
	for i := range n {
		it := &t.work[i]
		if seen[key{it.ev.Type, it.ev.Path}] {
			continue
		}
		p, _ := t.s.spath(it.ev.Path)
		if _, have := t.nodes[p]; !have {
			continue
		}
		switch it.ev.Type {
		case zk.EventNodeDataChanged, zk.EventNodeDeleted:
		case zk.EventNodeChildrenChanged:
			if t.kids[p] >= bigDir {
				continue
			}
		default:
			continue
		}
		seen[key{it.ev.Type, it.ev.Path}] = true
		idx = append(idx, i)
	}
	if len(idx) < 2 {
		return // nothing to overlap
	}
	parallel.For(len(idx), aheadParallel, func(j int) {
		it := &t.work[idx[j]]
		p, _ := t.s.spath(it.ev.Path)
		r := &found{}
		switch it.ev.Type {
		case zk.EventNodeDataChanged:
			r.st, r.err = t.getW(ctx, p)
		case zk.EventNodeDeleted: // the read of the name taken again, if it is (apply)
			*r = t.readNew(ctx, p)
		default:
			r.kids, r.err = t.childrenW(ctx, p)
		}
		it.pre = r
	})
	t.early = map[string]found{}
	var fresh []string
	for _, i := range idx {
		it := &t.work[i]
		if it.ev.Type == zk.EventNodeDeleted {
			p, _ := t.s.spath(it.ev.Path)
			t.early[p] = *it.pre
			continue
		}
		if it.ev.Type != zk.EventNodeChildrenChanged || it.pre.err != nil {
			continue
		}
		p, _ := t.s.spath(it.ev.Path)
		for _, k := range it.pre.kids {
			if c := store.Join(p, k); !t.hasNode(c) {
				fresh = append(fresh, c)
			}
		}
	}
	if len(fresh) == 0 {
		return
	}
	reads := make([]found, len(fresh))
	parallel.For(len(fresh), aheadParallel, func(j int) { reads[j] = t.readNew(ctx, fresh[j]) })
	for j, p := range fresh {
		t.early[p] = reads[j]
	}
}

func (t *tree) hasNode(p string) bool {
	_, ok := t.nodes[p]
	return ok
}

// readNew reads p's stat and children, arming both watches: the first
// read of a node. Safe for concurrent use.
func (t *tree) readNew(ctx context.Context, p string) found {
	var r found
	if r.st, r.err = t.getW(ctx, p); r.err == nil {
		r.kids, r.err = t.childrenW(ctx, p)
	}
	return r
}

func (t *tree) handle(ctx context.Context, it item) {
	ev := it.ev
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
			t.lost = true
		case zk.StateHasSession:
			if t.lost {
				t.lost, t.needRescan = false, true
			}
		}
	case zk.EventNotWatching:
		t.lost = true
	default:
		if t.needRescan || t.lost {
			return // the rescan re-reads everything
		}
		if err := t.apply(ctx, ev, it.pre); err != nil {
			t.s.log.Debug("watch: re-read failed", "subsystem", "zkstore", "path", ev.Path, "err", err)
			t.needRescan = true
		}
	}
}

// apply handles one node notification; pre, when not nil, is its re-read.
func (t *tree) apply(ctx context.Context, ev zk.Event, pre *found) error {
	p, _ := t.s.spath(ev.Path)
	_, have := t.nodes[p]
	switch ev.Type {
	case zk.EventNodeCreated:
		if p == t.root && !have {
			return t.add(ctx, []string{p}, true)
		}
	case zk.EventNodeDeleted:
		if !have && p != t.root {
			return nil
		}
		t.remove(p)
		// The name may be taken again already. Its parent's child watch may
		// have fired before (its notification is queued, and a listing then
		// shows the name, which is taken for the node deleted here), so the
		// re-creation notified nothing: a read now is the only way to learn
		// of the new node and to watch it.
		return t.add(ctx, []string{p}, true)
	case zk.EventNodeDataChanged:
		if have {
			return t.refresh(ctx, p, pre)
		}
	case zk.EventNodeChildrenChanged:
		if have && t.kids[p] >= bigDir {
			at := t.listAfter[p]
			if !time.Now().Before(at) {
				return t.relistNow(ctx, p)
			}
			if len(t.relist) == 0 || at.Before(t.relistAt) {
				t.relistAt = at
			}
			t.relist[p] = true
			return nil
		}
		if have {
			return t.rechild(ctx, p, pre)
		}
	}
	return nil
}

// relistDue re-lists the big directories whose child watch fired.
func (t *tree) relistDue(ctx context.Context) {
	due := t.relist
	t.relist = map[string]bool{}
	if t.needRescan || t.lost {
		return // the rescan re-reads everything
	}
	for p := range due {
		if _, have := t.nodes[p]; !have {
			continue
		}
		if err := t.relistNow(ctx, p); err != nil {
			t.s.log.Debug("watch: re-list failed", "subsystem", "zkstore", "path", p, "err", err)
			t.needRescan = true
			return
		}
	}
}

// relistNow re-lists the big directory p and sets when it may be listed
// again, by what this listing cost.
func (t *tree) relistNow(ctx context.Context, p string) error {
	start := time.Now()
	err := t.rechild(ctx, p, nil)
	took := time.Since(start)
	t.listAfter[p] = start.Add(took + min(max(relistDelay, relistShare*took), relistMax))
	return err
}

// refresh re-reads p's data (re-arming its data watch), or takes pre.
func (t *tree) refresh(ctx context.Context, p string, pre *found) error {
	var st *zk.Stat
	var err error
	if pre != nil {
		st, err = pre.st, pre.err
	} else {
		st, err = t.getW(ctx, p)
	}
	if errors.Is(err, zk.ErrNoNode) {
		t.remove(p)
		return nil
	}
	if err != nil {
		return err
	}
	k := t.nodes[p]
	if k.czxid != st.Czxid { // deleted and created again in between
		t.remove(p)
		return t.add(ctx, []string{p}, true)
	}
	if k.mzxid != st.Mzxid {
		// Writes between the notification and this read coalesce; the data
		// version counts them, so report one EventPut per version.
		t.setNode(p, knownOf(st))
		for v := k.version + 1; v <= int64(st.Version); v++ {
			t.emit(store.Event{Type: store.EventPut, Path: p, Version: v})
		}
	}
	return nil
}

// rechild re-lists p's children (re-arming its child watch), or takes
// pre, and reads the new ones.
func (t *tree) rechild(ctx context.Context, p string, pre *found) error {
	var names []string
	var err error
	if pre != nil {
		names, err = pre.kids, pre.err
	} else {
		names, err = t.childrenW(ctx, p)
	}
	if errors.Is(err, zk.ErrNoNode) {
		t.remove(p)
		return nil
	}
	if err != nil {
		return err
	}
	t.kids[p] = len(names)
	now := map[string]bool{}
	var added []string
	for _, n := range names {
		c := store.Join(p, n)
		now[c] = true
		if _, ok := t.nodes[c]; !ok {
			added = append(added, c)
		}
	}
	// Children that are gone are left to their own NodeDeleted notification
	// (every known node has a data watch), which keeps deletes in the order
	// the server reports them.
	slices.Sort(added)
	return t.add(ctx, added, true)
}

// add reads the subtrees at paths (arming their watches), breadth first,
// recording them and, with report, emitting one EventPut per node.
func (t *tree) add(ctx context.Context, paths []string, report bool) error {
	for len(paths) > 0 {
		res := make([]found, len(paths))
		var left []int
		for i, p := range paths { // the reads readAhead did for this window, if any
			if r, ok := t.early[p]; ok {
				res[i] = r
				delete(t.early, p)
			} else {
				left = append(left, i)
			}
		}
		parallel.For(len(left), readParallel, func(j int) { res[left[j]] = t.readNew(ctx, paths[left[j]]) })
		var next []string
		for i, p := range paths {
			r := res[i]
			switch {
			case errors.Is(r.err, zk.ErrNoNode):
				if r.st != nil { // vanished between the two reads
					t.setNode(p, knownOf(r.st))
					if report {
						t.emit(store.Event{Type: store.EventPut, Path: p, Version: int64(r.st.Version)})
					}
					t.remove(p)
				}
				if p == t.root {
					if err := t.armRoot(ctx); err != nil {
						return err
					}
				}
				continue
			case r.err != nil:
				return r.err
			}
			if _, ok := t.nodes[p]; ok {
				continue
			}
			t.setNode(p, knownOf(r.st))
			t.kids[p] = len(r.kids)
			for v := int64(0); report && v <= int64(r.st.Version); v++ {
				t.emit(store.Event{Type: store.EventPut, Path: p, Version: v}) // its create and writes
			}
			slices.Sort(r.kids)
			for _, k := range r.kids {
				if _, ok := t.nodes[store.Join(p, k)]; !ok {
					next = append(next, store.Join(p, k))
				}
			}
		}
		// The children are read and reported now, before the notifications
		// queued meanwhile: a subtree created in one commit is whole in the
		// consumer's copy before any change committed after it is reported
		// (a cache's Barrier relies on it).
		paths = next
	}
	return nil
}

// armRoot sets an exists watch on a missing root; if it exists after all,
// it is read.
func (t *tree) armRoot(ctx context.Context) error {
	ok, err := call(ctx, func() (bool, error) {
		ok, _, _, err := t.s.conn.ExistsW(t.s.zpath(t.root))
		return ok, err
	})
	if err != nil {
		return err
	}
	if ok {
		return t.add(ctx, []string{t.root}, true)
	}
	return nil
}

// remove forgets p's subtree, emitting EventDelete for every node after its
// descendants.
func (t *tree) remove(p string) {
	if t.under[p] == 0 { // nothing below it known: the usual case, no scan of every node
		if k, ok := t.nodes[p]; ok {
			t.emit(store.Event{Type: store.EventDelete, Path: p, Version: k.version})
			t.dropNode(p)
		}
		return
	}
	var gone []string
	for c := range t.nodes {
		if store.Under(c, p) {
			gone = append(gone, c)
		}
	}
	slices.Sort(gone)
	slices.Reverse(gone)
	for _, c := range gone {
		t.emit(store.Event{Type: store.EventDelete, Path: c, Version: t.nodes[c].version})
		t.dropNode(c)
	}
}

// setNode records p, counting a new node under each of its ancestors.
func (t *tree) setNode(p string, k known) {
	if _, ok := t.nodes[p]; !ok {
		for a := p; a != "/"; {
			a = store.Parent(a)
			t.under[a]++
		}
	}
	t.nodes[p] = k
}

// dropNode forgets p (not its descendants) and uncounts it.
func (t *tree) dropNode(p string) {
	if _, ok := t.nodes[p]; !ok {
		return
	}
	delete(t.nodes, p)
	for a := p; a != "/"; {
		a = store.Parent(a)
		if t.under[a]--; t.under[a] <= 0 {
			delete(t.under, a)
		}
	}
}

// scan reads the whole subtree, arming every watch.
func (t *tree) scan(ctx context.Context) error {
	t.nodes, t.kids, t.relist, t.under = map[string]known{}, map[string]int{}, map[string]bool{}, map[string]int{}
	t.listAfter = map[string]time.Time{}
	return t.add(ctx, []string{t.root}, false)
}

// rescan re-reads the subtree after a lost connection or an overflow and
// tells the consumer to re-read too.
func (t *tree) rescan(ctx context.Context) error {
	t.inMu.Lock()
	t.inbox = nil // the scan supersedes what was queued
	t.inMu.Unlock()
	t.work, t.ahead, t.early = nil, 0, nil
	if err := t.scan(ctx); err != nil {
		return err
	}
	t.needRescan = false
	t.pending = append(t.pending[:0], store.Event{Type: store.EventResync, Path: t.root})
	return nil
}

// deliver hands the consumer the pending events it takes without
// waiting, in their order. It runs after each notification the watch
// handles: a drain that handled thousands of notifications before it
// handed anything on, while the consumer waited, overflowed the pending
// events into a resync (and the cache then re-read all of /state) in the
// simulated cluster's first minute, though the consumer kept up.
func (t *tree) deliver() { t.pending = deliver(t.out, t.pending) }

func (t *tree) emit(ev store.Event) {
	t.pending = queue(t.s.log, t.root, t.maxPending, t.pending, ev)
}

// deliver hands out the pending events it takes without waiting, in
// their order, and returns those left.
func deliver(out chan<- store.Event, pending []store.Event) []store.Event {
	for len(pending) > 0 {
		select {
		case out <- pending[0]:
			pending = pending[1:]
		default:
			return pending
		}
	}
	return pending
}

// queue appends ev to a watch's pending events; past max of them, the
// consumer fell behind, and they become one resync of the root first.
func queue(log *slog.Logger, root string, max int, pending []store.Event, ev store.Event) []store.Event {
	if len(pending) >= max {
		log.Warn("watch: the consumer fell behind by more events than it holds; it re-reads the subtree",
			"subsystem", "zkstore", "root", root, "limit", max)
		pending = append(pending[:0], store.Event{Type: store.EventResync, Path: root})
	}
	return append(pending, ev)
}

func (t *tree) getW(ctx context.Context, p string) (*zk.Stat, error) {
	return call(ctx, func() (*zk.Stat, error) {
		_, st, _, err := t.s.conn.GetW(t.s.zpath(p))
		return st, err
	})
}

func (t *tree) childrenW(ctx context.Context, p string) ([]string, error) {
	return call(ctx, func() ([]string, error) {
		kids, _, _, err := t.s.conn.ChildrenW(t.s.zpath(p))
		return kids, err
	})
}

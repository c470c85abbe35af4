package zk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/internal/parallel"
	"github.com/ejcloud/elasticjob/store"
)

// ptree is one Watch on a persistent recursive watch (ZooKeeper 3.6+):
// the server notifies every create, data change and delete under the root,
// once each, in commit order (the ops of one multi in their order), and
// the watch stays set. So the watch reads nothing after its first scan: a
// node's version is counted (0 at its create, one more per data change),
// and an event is emitted per notification. Only a scan (at the start,
// and after a lost connection) reads, and the notifications that arrive
// meanwhile are judged against it exactly: the server sends every
// notification of a change before the reply to any read that sees the
// change, and the scan notes, on the client's receive loop, how many
// notifications had arrived at each of its replies (wire.go).
type ptree struct {
	s    *Store
	root string // store path
	out  chan store.Event

	inMu     sync.Mutex
	inbox    []note
	count    uint64 // notifications pushed so far
	overflow bool
	wake     chan struct{}

	nodes map[string]int32 // store path → data version
	// While the scan's notifications are applied: when the scan observed
	// each path (the notification count at the reply that showed it
	// present, absent, or its children); a notification before that is in
	// the scan already. coverUntil: notifications from it on are all after
	// the scan.
	seen       map[string]uint64
	listed     map[string]uint64
	coverUntil uint64
	base       uint64 // notifications before the watch was set (rescans drop them)

	pending    []store.Event
	maxPending int
	lost       bool
	needRescan bool
}

// note is a queued notification and its place among all of them.
type note struct {
	ev  zk.Event
	seq uint64
	at  time.Time // its arrival
}

// watchPersistent starts a Watch of path on a persistent recursive watch;
// ErrNoPersistentWatches when the server has none.
func (s *Store) watchPersistent(ctx context.Context, path string) (<-chan store.Event, error) {
	t := &ptree{s: s, root: path, out: make(chan store.Event, outBuffer), wake: make(chan struct{}, 1), maxPending: maxPending}
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
		return nil, err
	}
	t.pending = nil // the scan reports nothing; notifications after it do
	go t.run(tctx)
	return t.out, nil
}

// push queues a notification; it runs on the client's receive loop.
func (t *ptree) push(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession, zk.EventNotWatching:
	case zk.EventNodeCreated, zk.EventNodeDataChanged, zk.EventNodeDeleted:
		p, ok := t.s.spath(ev.Path)
		if !ok || !store.Under(p, t.root) {
			return
		}
	default:
		return // child notifications belong to other users' one-shot watches (Session)
	}
	t.inMu.Lock()
	if len(t.inbox) >= maxInbox {
		t.overflow, t.inbox = true, nil
	}
	t.inbox = append(t.inbox, note{ev: ev, seq: t.count, at: time.Now()})
	t.count++
	t.inMu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// now is the number of notifications pushed so far.
func (t *ptree) now() uint64 {
	t.inMu.Lock()
	defer t.inMu.Unlock()
	return t.count
}

func (t *ptree) run(ctx context.Context) {
	defer close(t.out)
	defer t.s.unregister(t)
	var retry <-chan time.Time
	for {
		var out chan store.Event
		var next store.Event
		if len(t.pending) > 0 {
			out, next = t.out, t.pending[0]
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
		}
		t.drain()
		if t.needRescan && !t.lost && ctx.Err() == nil {
			if err := t.rescan(ctx); err != nil {
				t.s.log.Debug("watch: re-read failed", "subsystem", "zkstore", "root", t.root, "err", err)
				retry = time.After(rescanPause)
			}
		}
	}
}

// drain applies the queued notifications in their order.
func (t *ptree) drain() {
	t.inMu.Lock()
	notes, overflow := t.inbox, t.overflow
	t.inbox, t.overflow = nil, false
	t.inMu.Unlock()
	if overflow {
		t.s.log.Warn("watch: more notifications waited than it holds; re-reading the subtree",
			"subsystem", "zkstore", "root", t.root, "limit", maxInbox)
		t.needRescan = true
	}
	for _, n := range notes {
		t.apply(n)
		t.deliver()
	}
}

// apply handles one notification.
func (t *ptree) apply(n note) {
	ev := n.ev
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
			t.lost = true
		case zk.StateHasSession:
			if t.lost { // the server dropped the watch with the connection
				t.lost, t.needRescan = false, true
			}
		}
		return
	case zk.EventNotWatching:
		t.lost = true
		return
	}
	if t.lost || t.needRescan || n.seq < t.base {
		return // the rescan covers it
	}
	p, _ := t.s.spath(ev.Path)
	if t.seen != nil {
		if n.seq >= t.coverUntil {
			t.seen, t.listed = nil, nil
		} else if t.covered(p, n.seq) {
			return
		}
	}
	v, have := t.nodes[p]
	switch ev.Type {
	case zk.EventNodeCreated:
		t.nodes[p] = 0
		t.emit(store.Event{Type: store.EventPut, Path: p, At: n.at})
	case zk.EventNodeDataChanged:
		if !have {
			t.s.log.Warn("watch: a change of a node it does not know; re-reading the subtree", "subsystem", "zkstore", "path", p)
			t.needRescan = true
			return
		}
		t.nodes[p] = v + 1
		t.emit(store.Event{Type: store.EventPut, Path: p, Version: int64(v) + 1, At: n.at})
	case zk.EventNodeDeleted:
		if have {
			delete(t.nodes, p)
			t.emit(store.Event{Type: store.EventDelete, Path: p, Version: int64(v), At: n.at})
		}
	}
}

// covered reports whether the scan saw the notification numbered seq of
// p already: p was read (present or not) after it, or an ancestor's
// listing or read after it showed p absent.
func (t *ptree) covered(p string, seq uint64) bool {
	q := p
	for {
		if at, ok := t.seen[q]; ok {
			if q == p {
				return seq < at
			}
			if l, ok := t.listed[q]; ok {
				return seq < l
			}
			return seq < at // read without children, or absent
		}
		if q == t.root || q == "/" {
			return false
		}
		q = store.Parent(q)
	}
}

// scan sets the watch, then reads every node's version below the root,
// noting when each reply came (see ptree). The notifications it leaves
// queued are applied after it.
func (t *ptree) scan(ctx context.Context) error {
	var base uint64
	if err := t.s.addWatch(ctx, t.s.zpath(t.root), func() { base = t.now() }); err != nil {
		return fmt.Errorf("zk store watch %s: %w", t.root, err)
	}
	t.base = base
	t.nodes, t.seen, t.listed = map[string]int32{}, map[string]uint64{}, map[string]uint64{}
	type read struct {
		path  string
		st    *zk.Stat
		at    uint64
		err   error
		names []string
	}
	var mu sync.Mutex // guards seen and listed while reads run
	level := []read{{path: t.root}}
	for len(level) > 0 {
		parallel.For(len(level), subtreeParallel, func(i int) {
			r := &level[i]
			r.st, r.err = t.s.exists(ctx, t.s.zpath(r.path), func() { r.at = t.now() })
		})
		var dirs []read
		for _, r := range level {
			switch {
			case errors.Is(r.err, zk.ErrNoNode):
				t.seen[r.path] = r.at
			case r.err != nil:
				return fmt.Errorf("zk store watch %s: read %s: %w", t.root, r.path, r.err)
			default:
				t.seen[r.path] = r.at
				t.nodes[r.path] = r.st.Version
				if r.st.NumChildren > 0 {
					dirs = append(dirs, read{path: r.path})
				}
			}
		}
		parallel.For(len(dirs), subtreeParallel, func(i int) {
			d := &dirs[i]
			var at uint64
			d.names, d.err = t.s.children(ctx, t.s.zpath(d.path), func() { at = t.now() })
			mu.Lock()
			t.listed[d.path] = at
			mu.Unlock()
		})
		level = level[:0:0]
		for _, d := range dirs {
			if d.err != nil && !errors.Is(d.err, zk.ErrNoNode) {
				return fmt.Errorf("zk store watch %s: list %s: %w", t.root, d.path, d.err)
			}
			slices.Sort(d.names)
			for _, n := range d.names {
				level = append(level, read{path: store.Join(d.path, n)})
			}
		}
	}
	t.coverUntil = t.now()
	return nil
}

// rescan reads the subtree again after a lost connection or an overflow
// and tells the consumer to re-read too.
func (t *ptree) rescan(ctx context.Context) error {
	if err := t.scan(ctx); err != nil {
		return err
	}
	t.needRescan = false
	t.pending = append(t.pending[:0], store.Event{Type: store.EventResync, Path: t.root})
	return nil
}

// deliver hands the consumer the pending events it takes without
// waiting, in their order.
func (t *ptree) deliver() { t.pending = deliver(t.out, t.pending) }

func (t *ptree) emit(ev store.Event) {
	t.pending = queue(t.s.log, t.root, t.maxPending, t.pending, ev)
}

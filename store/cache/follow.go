package cache

import (
	"context"
	"errors"
	"time"

	"github.com/ejcloud/elasticjob/internal/parallel"
	"github.com/ejcloud/elasticjob/store"
)

// follower is the worker of one root: it applies the backing store's
// events of the subtree in their order and passes each on once the copy
// reflects it, and re-reads the subtree when the watch missed events.
type follower struct {
	c *KV
	r *root
}

// resyncPause spaces out attempts to re-read a subtree that failed.
const resyncPause = 200 * time.Millisecond

// maxApply bounds the events a worker applies together; maxHeld the
// events it keeps while the subtree is re-read (beyond them it re-reads
// again afterwards).
const (
	maxApply = 4096
	maxHeld  = 1 << 20
)

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

func (f follower) work(ctx context.Context, events <-chan store.Event) {
	batch := make([]store.Event, 0, maxApply)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() == nil {
					f.c.log.Error("cache: backing watch closed", "root", f.r.path)
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
			resync := f.applyBatch(ctx, batch)
			clear(batch) // the events' values and paths are the copy's now, or garbage
			if resync && !f.resyncFollowing(ctx, events) {
				if ctx.Err() == nil {
					f.c.log.Error("cache: backing watch closed", "root", f.r.path)
				}
				return
			}
		}
	}
}

// applyBatch brings the copy up to date with events, in their order, and
// passes them on. It reports whether the subtree must be re-read instead:
// a resync event (always the last of a batch), or a re-read that failed.
func (f follower) applyBatch(ctx context.Context, events []store.Event) bool {
	c, r := f.c, f.r
	if last := events[len(events)-1]; last.Type == store.EventResync {
		if len(events) > 1 && f.applyBatch(ctx, events[:len(events)-1]) {
			return true
		}
		c.log.Warn("cache: the backing watch missed events (its queue overflowed or it reconnected); re-reading the subtree",
			"root", r.path)
		return true
	}
	if err := f.applyRuns(ctx, events); err != nil {
		c.log.Warn("cache: re-read failed; re-reading the subtree", "err", err)
		return true // the resync announces the changes
	}
	if last := events[len(events)-1].Revision; last > 0 {
		c.tree.mu.Lock()
		r.passLocked(last - 1) // the batch may end inside a commit's events
		c.tree.mu.Unlock()
	}
	c.hub.Publish(events)
	lag := c.lag.Load()
	now := time.Now()
	for _, ev := range events {
		c.waiters.release(ev)
		if lag != nil && !ev.At.IsZero() {
			(*lag)(now.Sub(ev.At))
		}
	}
	return false
}

// resyncFollowing re-reads the subtree and, meanwhile, keeps taking the
// backing watch's events (a large subtree on ZooKeeper takes a minute to
// read, and the watch's own queue would overflow into another resync); it
// applies them after the swap, in their order. It returns false when the
// watch ended.
func (f follower) resyncFollowing(ctx context.Context, events <-chan store.Event) bool {
	for {
		start := time.Now()
		done := make(chan struct{})
		go func() { f.resync(ctx); close(done) }()
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
		f.c.log.Info("cache: subtree re-read", "root", f.r.path, "took", time.Since(start).Round(time.Millisecond),
			"events_meanwhile", len(held))
		if !open || ctx.Err() != nil {
			return false
		}
		for len(held) > 0 && !again {
			n := min(len(held), maxApply)
			again = f.applyBatch(ctx, held[:n])
			held = held[n:]
		}
		if !again {
			return true
		}
		f.c.log.Warn("cache: the backing watch missed events during the re-read; re-reading the subtree again", "root", f.r.path)
	}
}

// applyRuns applies events in order: the runs that carry their change
// (revision.go) as they are told, the others by applyEvents.
func (f follower) applyRuns(ctx context.Context, events []store.Event) error {
	c, r := f.c, f.r
	if c.src.rv == nil {
		return f.applyEvents(ctx, events)
	}
	c.tree.mu.RLock()
	fence := r.fence
	c.tree.mu.RUnlock()
	valued := func(ev store.Event) bool { return ev.HasValue && ev.Revision > fence }
	for len(events) > 0 {
		v := valued(events[0])
		n := 1
		for n < len(events) && valued(events[n]) == v {
			n++
		}
		if v {
			behind := c.tree.applyValues(r, events[:n])
			errs := make([]error, len(behind))
			parallel.For(len(behind), eventReadParallel, func(i int) { _, errs[i] = c.refreshIn(ctx, r, behind[i]) })
			if err := errors.Join(errs...); err != nil {
				return err
			}
		} else if err := f.applyEvents(ctx, events[:n]); err != nil {
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
func (f follower) applyEvents(ctx context.Context, events []store.Event) error {
	c := f.c
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
		c.tree.mu.RLock()
		defer c.tree.mu.RUnlock()
		for p, s := range in {
			if !c.tree.currentLocked(s.last, s.deleted) {
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
		c.flights.awaitLanded(ctx, stale)
		stale = staleOf(func(yield func(string, seen) bool) {
			for _, p := range stale {
				if !yield(p, paths[p]) {
					return
				}
			}
		})
	}
	errs := make([]error, len(stale))
	parallel.For(len(stale), eventReadParallel, func(i int) { _, errs[i] = c.refreshIn(ctx, f.r, stale[i]) })
	return errors.Join(errs...)
}

// resync re-reads the subtree until it succeeds, then tells the watchers
// and releases every commit waiting for an event under it.
func (f follower) resync(ctx context.Context) {
	c, r := f.c, f.r
	for ctx.Err() == nil {
		err := c.rescan(ctx, r)
		if err == nil {
			c.hub.Publish([]store.Event{{Type: store.EventResync, Path: r.path}})
			c.waiters.releaseUnder(r.path)
			return
		}
		c.log.Warn("cache: re-read of the subtree failed", "root", r.path, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(resyncPause):
		}
	}
}

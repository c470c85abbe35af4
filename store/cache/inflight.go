package cache

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// Commits in flight. On ZooKeeper the watch's notifications of a commit
// arrive before the commit's own reply, so the worker meets events of
// versions the copy does not hold yet, though the commit is about to put
// them there. Re-reading those paths cost a read each over the writer's
// session and held the paths' locks while the commit waited to apply
// them. So the worker waits for the commits in flight on them to land
// (bounded by waitInflight), and re-reads only what is still stale then.

// waitInflight bounds how long the worker waits for commits in flight.
const waitInflight = 5 * time.Second

// fly records a commit of paths as in flight.
func (c *KV) fly(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		c.inflight[p]++
	}
}

// land records the commit's end and wakes the worker.
func (c *KV) land(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		if c.inflight[p]--; c.inflight[p] <= 0 {
			delete(c.inflight, p)
		}
	}
	close(c.settled)
	c.settled = make(chan struct{})
}

// awaitLanded waits until no commit in flight writes any of paths, or
// waitInflight passed, or ctx ended.
func (c *KV) awaitLanded(ctx context.Context, paths []string) {
	deadline := time.NewTimer(waitInflight)
	defer deadline.Stop()
	for {
		c.mu.RLock()
		busy := false
		for _, p := range paths {
			if c.inflight[p] > 0 {
				busy = true
				break
			}
		}
		wake := c.settled
		c.mu.RUnlock()
		if !busy {
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// current reports whether the copy reflects an event already: a put of a
// version it holds or passed (and no delete of it since the copy's last
// read), or a delete of a node it does not hold. c.mu is held.
func (c *KV) current(ev store.Event, deleted bool) bool {
	n := c.nodes[ev.Path]
	return (ev.Type == store.EventPut && n != nil && n.version >= ev.Version && !deleted) ||
		(ev.Type == store.EventDelete && n == nil)
}

package cache

import (
	"context"

	"github.com/ejcloud/elasticjob/store"
)

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
		return c.src.commit(ctx, c.hint, ops)
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
		applied, evs, brevs, err = c.src.commitChain(ctx, hint, chain, batches)
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
	paths := writes(ops)
	var before map[string]bool
	var pd *pending
	if c.strict {
		mirrored := c.mirrored(paths)
		before, pd = c.tree.presence(mirrored), c.waiters.begin(mirrored)
		defer c.waiters.end(pd, mirrored)
	}
	fl := c.flights.fly(paths)
	landed := false
	defer func() {
		if !landed {
			c.flights.land(fl, paths)
		}
	}()
	n, evs, revs, err := commit()
	done := ops[:n]
	rctx := context.WithoutCancel(ctx)
	reread, apply := c.applyCommitted(done, revs, fl) // what the ops wrote is known, but for blind puts
	reread = c.applyReported(reread, done, evs, fl)
	if err != nil { // what the store holds now: what the failed ops wrote or checked
		reread = append(reread, touched(ops[n:])...)
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
	defer cancel()
	if rerr := c.Refresh(fctx, reread...); rerr != nil {
		c.log.Warn("cache: re-read after commit", "err", rerr)
	}
	// What another wrote into the copy meanwhile may be later than what
	// this commit left (flights): read from the store instead.
	if overtaken := apply(); len(overtaken) > 0 {
		if rerr := c.Refresh(fctx, overtaken...); rerr != nil {
			c.log.Warn("cache: re-read after commit", "err", rerr)
		}
	}
	c.flights.land(fl, paths)
	landed = true
	written := writes(done)
	noteCommitted(ctx, written)
	if c.strict && len(written) > 0 {
		pd.await(rctx, c.tree.wants(c.mirrored(written), before), c.log)
	}
	return n, err
}

// hint is the copy's belief about a mirrored path, for the backing
// store's planning of a commit (store.HintedReporter).
func (c *KV) hint(p string, withChildren bool) (exists bool, children []string, known bool) {
	if c.roots.of(p) == nil {
		return false, nil, false
	}
	exists, children = c.tree.belief(p, withChildren)
	return exists, children, true
}

// mirrored returns the paths under a mirrored root.
func (c *KV) mirrored(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if c.roots.of(p) != nil {
			out = append(out, p)
		}
	}
	return out
}

// writes returns the paths ops write (all but the checks').
// touched returns every path of ops, checks included: a commit that
// failed on a check (a version the copy held stale) re-reads the node, so
// the caller's next try reads the store's version, not the same stale one
// (a cron fire checks its job's gate: a copy that missed the gate's change
// would otherwise refuse every fire until its watch caught up).
func touched(ops []store.Op) []string {
	paths := make([]string, 0, len(ops))
	for _, op := range ops {
		paths = append(paths, op.Path)
	}
	return paths
}

func writes(ops []store.Op) []string {
	paths := make([]string, 0, len(ops))
	for _, op := range ops {
		if op.Kind != store.OpCheck {
			paths = append(paths, op.Path)
		}
	}
	return paths
}

package cache

import (
	"bytes"
	"sort"

	"github.com/ejcloud/elasticjob/store"
)

// outcome is what a successful commit left at one path.
type outcome struct {
	exists  bool
	value   []byte
	version int64
	rev     int64 // the revision of the commit that left it (0: unknown)
}

// applyCommitted puts into the copy what a successful commit wrote, so the
// writer reads its writes without a read of the store: a create leaves
// version 0, a conditional set the version after the one it matched, a
// delete nothing (with its subtree). A blind put (or a set with
// AnyVersion) leaves a version the copy cannot know: those paths are
// returned for a re-read. A path the copy already holds at a later version
// (another writer's change, applied from the watch first) is left as it is;
// events come per path in order, so a later change always follows in the
// copy.
//
// The known outcomes are applied by apply, which Commit calls after it
// re-read the blind puts: a reader never sees a commit's deletes and
// creates without the blind puts that went with them (a run's running
// shard gone, but not yet its record marked done).
//
// revs (nil: unknown) is the revision of each op's commit (store.Revisioned);
// a known outcome is applied at it, unless the copy holds a later state.
// On a store without revisions, an outcome at a path another wrote into
// the copy since the commit, fl, flew is not applied (flights): apply
// returns those paths, to be re-read.
func (c *KV) applyCommitted(ops []store.Op, revs []int64, fl *flight) (reread []string, apply func() (overtaken []string)) {
	out, unknown := outcomes(c.roots, ops, revs)
	paths := make([]string, 0, len(out)+len(unknown))
	for p := range out {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a delete of a parent before the creates under it
	for p, u := range unknown {
		if u {
			reread = append(reread, p)
		}
	}
	// Order of appearance: a reader should see a commit's new state before
	// what it removed (a launched shard running before its ready entry is
	// gone, a run's record done before its shard is). So: the deletes that
	// something of the batch is written under (a subtree deleted and
	// written into again) first, then the blind puts (re-read by Commit),
	// then the other writes, then the other deletes.
	above := map[string]bool{} // proper ancestors of what the batch writes
	for _, p := range append(paths[:len(paths):len(paths)], reread...) {
		if !unknown[p] && !out[p].exists {
			continue
		}
		for a := store.Parent(p); a != "/" && !above[a]; a = store.Parent(a) {
			above[a] = true
		}
	}
	var overtaken []string
	applyIf := func(keep func(p string, o outcome) bool) {
		for _, p := range paths {
			if o := out[p]; !unknown[p] && keep(p, o) && !c.applyOne(p, o, fl) {
				overtaken = append(overtaken, p)
			}
		}
	}
	applyIf(func(p string, o outcome) bool { return !o.exists && above[p] })
	return reread, func() []string {
		applyIf(func(_ string, o outcome) bool { return o.exists })
		applyIf(func(p string, o outcome) bool { return !o.exists && !above[p] })
		return overtaken
	}
}

// applyReported applies, of the paths to re-read after a commit (blind
// puts: the version they wrote is not in the ops), those the store
// reported with the commit's events (store.Reporter): the op's value at
// the reported version, or the removal (not at a path another wrote into
// the copy since the commit, fl, flew: applyCommitted). It returns the
// paths still to re-read.
func (c *KV) applyReported(reread []string, ops []store.Op, evs []store.Event, fl *flight) []string {
	if len(reread) == 0 || len(evs) == 0 {
		return reread
	}
	last := make(map[string]store.Event, len(evs))
	for _, ev := range evs {
		last[ev.Path] = ev
	}
	value := make(map[string][]byte, len(ops))
	for _, op := range ops {
		if op.Kind == store.OpPut || op.Kind == store.OpSet || op.Kind == store.OpCreate {
			value[op.Path] = op.Value
		}
	}
	left := reread[:0:0]
	for _, p := range reread {
		ev, ok := last[p]
		if !ok || c.roots.of(p) == nil {
			left = append(left, p)
			continue
		}
		if !c.applyOne(p, outcome{exists: ev.Type == store.EventPut, value: bytes.Clone(value[p]), version: ev.Version, rev: ev.Revision}, fl) {
			left = append(left, p)
		}
	}
	return left
}

// applyOne sets or removes one path under its locks, as commit fl's
// outcome, and reports whether it did (putOutcomeLocked).
func (c *KV) applyOne(p string, o outcome, fl *flight) bool {
	r := c.roots.of(p)
	r.scan.RLock()
	defer r.scan.RUnlock()
	mu := r.lockOf(p)
	mu.Lock()
	defer mu.Unlock()
	c.tree.mu.Lock()
	defer c.tree.mu.Unlock()
	return c.tree.putOutcomeLocked(r, p, o, fl)
}

// outcomes is what a successful commit of ops left at each mirrored path
// it wrote (see applyCommitted), and which of those paths it left at a
// version the ops do not tell (unknown: a blind put).
func outcomes(rs roots, ops []store.Op, revs []int64) (out map[string]outcome, unknown map[string]bool) {
	out, unknown = map[string]outcome{}, map[string]bool{}
	for i, op := range ops {
		if rs.of(op.Path) == nil {
			continue
		}
		prev, known := out[op.Path]
		var rev int64
		if i < len(revs) {
			rev = revs[i]
		}

		switch op.Kind {
		case store.OpCreate:
			out[op.Path], unknown[op.Path] = outcome{exists: true, value: op.Value}, false
		case store.OpSet:
			switch {
			case op.Version != store.AnyVersion:
				out[op.Path], unknown[op.Path] = outcome{exists: true, value: op.Value, version: op.Version + 1}, false
			case known && !unknown[op.Path]:
				out[op.Path] = outcome{exists: true, value: op.Value, version: prev.version + 1}
			default:
				unknown[op.Path] = true
			}
		case store.OpPut:
			if known && !unknown[op.Path] {
				v := int64(0)
				if prev.exists {
					v = prev.version + 1
				}
				out[op.Path] = outcome{exists: true, value: op.Value, version: v}
			} else {
				unknown[op.Path] = true
			}
		case store.OpDelete:
			for p := range out {
				if store.Under(p, op.Path) {
					delete(out, p)
					delete(unknown, p)
				}
			}
			out[op.Path], unknown[op.Path] = outcome{}, false
		}
		if o, ok := out[op.Path]; ok && !unknown[op.Path] {
			o.rev = rev
			out[op.Path] = o
		}
	}
	return out, unknown
}

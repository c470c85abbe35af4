package cache

import (
	"context"

	"github.com/ejcloud/elasticjob/store"
)

// Events that carry the change (store.Revisioned backends: etcd, memory).
//
// Such an event says the node's state after a commit and that commit's
// revision, so the worker applies it without a read. What it must not do
// is put an older state over a newer one that something else wrote into
// the copy first: this process's own commit (applied on its reply,
// before its event comes) or a re-read (Refresh, a failed commit's
// paths). Those writes know their revision too (CommitAt, GetAt) and
// leave a hold: an event of that path, or of a path under a node they
// found or left absent, whose revision is not above the hold's, is
// already reflected and skipped. The worker's own progress is one
// number per root, passed: every change up to it is in the copy, so a
// reply or a read at a revision not above it is skipped, and holds not
// above it are dropped.
//
// A subtree re-read (Open, a resync) lists level by level, each read at
// its own revision; the events up to the revision read after it (fence)
// take the read path of a store without values, which never lets a
// node's version go back.

// hold is the revision of a state of a path written into the copy by
// something other than the watch; gone: the path (and its subtree) was
// left absent.
type hold struct {
	rev  int64
	gone bool
}

type holdAt struct {
	rev  int64
	path string
}

// staleLocked reports whether the copy already reflects p's state at
// rev or a later one; tree.mu is held. An event (ev) under a node held
// absent at its revision is of that commit, whose end state the copy
// holds; a commit's own outcome (or a read) there is that end state: a
// node deleted and written under again in one commit.
func (r *root) staleLocked(p string, rev int64, ev bool) bool {
	if rev <= r.passed {
		return true
	}
	if len(r.holds) == 0 {
		return false
	}
	if h, ok := r.holds[p]; ok && h.rev >= rev {
		return true
	}
	for a := p; a != "/"; {
		a = store.Parent(a)
		if h, ok := r.holds[a]; ok && h.gone && (h.rev > rev || ev && h.rev == rev) {
			return true
		}
	}
	return false
}

// noteLocked records a hold of p at rev; tree.mu is held.
func (r *root) noteLocked(p string, rev int64, gone bool) {
	if rev <= r.passed {
		return
	}
	if h, ok := r.holds[p]; ok && h.rev > rev {
		return
	}
	if r.holds == nil {
		r.holds = map[string]hold{}
	}
	r.holds[p] = hold{rev: rev, gone: gone}
	r.holdq = append(r.holdq, holdAt{rev, p})
}

// passLocked records that every change up to rev is in the copy and
// drops the holds it makes useless; tree.mu is held.
func (r *root) passLocked(rev int64) {
	if rev <= r.passed {
		return
	}
	r.passed = rev
	i := 0
	for ; i < len(r.holdq) && r.holdq[i].rev <= rev; i++ {
		h := r.holdq[i]
		if cur, ok := r.holds[h.path]; ok && cur.rev <= rev {
			delete(r.holds, h.path)
		}
	}
	if i > 0 {
		r.holdq = append(r.holdq[:0], r.holdq[i:]...)
	}
}

// resetLocked forgets the holds: a subtree re-read replaced the copy;
// the events up to fence take the read path. tree.mu is held.
func (r *root) resetLocked(fence int64) {
	r.holds, r.holdq = nil, nil
	r.fence = max(r.fence, fence)
}

// commitChainAt is store.CommitChain for a store.Revisioned backend: all
// batches in one commit, or, if that fails, batch by batch until one
// fails; revs has the revision of each applied batch's commit. When the
// backend is also a store.Reporter (rep), evs has each applied batch's
// events (the whole commit's with the last batch), from which the
// versions of blind puts are known without a read back.
func commitChainAt(ctx context.Context, rv store.Revisioned, rep store.Reporter, batches [][]store.Op) (applied int, revs []int64, evs [][]store.Event, err error) {
	commit := func(ops []store.Op) (int64, []store.Event, error) {
		if rep == nil {
			rev, err := rv.CommitAt(ctx, ops...)
			return rev, nil, err
		}
		e, err := rep.CommitReport(ctx, ops...)
		var rev int64 // none for a commit that wrote nothing
		if len(e) > 0 {
			rev = e[len(e)-1].Revision
		}
		return rev, e, err
	}
	if len(batches) > 1 {
		var all []store.Op
		for _, b := range batches {
			all = append(all, b...)
		}
		if rev, e, err := commit(all); err == nil {
			revs = make([]int64, len(batches))
			for i := range revs {
				revs[i] = rev
			}
			evs = make([][]store.Event, len(batches))
			evs[len(batches)-1] = e
			return len(batches), revs, evs, nil
		}
	}
	for _, b := range batches {
		if len(b) == 0 {
			revs, evs = append(revs, 0), append(evs, nil)
			applied++
			continue
		}
		rev, e, err := commit(b)
		if err != nil {
			return applied, revs, evs, err
		}
		revs, evs = append(revs, rev), append(evs, e)
		applied++
	}
	return applied, revs, evs, nil
}

package cache

import (
	"context"
	"fmt"

	"github.com/ejcloud/elasticjob/internal/parallel"
	"github.com/ejcloud/elasticjob/store"
)

// source is the backing store as the cache uses it: reads with their
// revision where the store has them, whole-subtree reads, and commits
// that report what they can of what they wrote.
type source struct {
	back store.KV
	rv   store.Revisioned // back, when its events carry their change (revision.go)
}

// readParallel bounds the reads of the backing store in flight while the
// cache reads a subtree.
const readParallel = 32

// getAt reads p with the revision of the read (0 where the store has
// none).
func (s source) getAt(ctx context.Context, p string) (store.Node, int64, error) {
	if s.rv != nil {
		return s.rv.GetAt(ctx, p)
	}
	n, err := s.back.Get(ctx, p)
	return n, 0, err
}

// readFenced is read, with the store's revision after it (0 where the
// store has none): the reads were made at revisions up to it.
func (s source) readFenced(ctx context.Context, p string, out map[string]store.Node) (int64, error) {
	if err := s.read(ctx, p, out); err != nil {
		return 0, err
	}
	if s.rv == nil {
		return 0, nil
	}
	rev, err := s.rv.Revision(ctx)
	if err != nil {
		return 0, fmt.Errorf("cache: read %s: revision: %w", p, err)
	}
	return rev, nil
}

// read collects p and its subtree into out (nothing if p is missing):
// with the backing store's Subtree where it has one, else one level at a
// time, the nodes of a level listed readParallel at once.
func (s source) read(ctx context.Context, p string, out map[string]store.Node) error {
	if sr, ok := s.back.(store.SubtreeReader); ok {
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
		n, err := s.back.Get(ctx, p)
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
		forEach(len(level), func(i int) { kids[i], errs[i] = s.back.List(ctx, level[i]) })
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

// commit applies ops in the backing store. It returns how many were
// applied (all or none), the events the store reported of them
// (store.Reporter, store.HintedReporter), or the revision of each op's
// commit (store.Revisioned).
func (s source) commit(ctx context.Context, hint store.Hint, ops []store.Op) (int, []store.Event, []int64, error) {
	if s.rv != nil {
		var rev int64
		var evs []store.Event
		var err error
		if rep, ok := s.back.(store.Reporter); ok {
			// Events at the commit's revision (store/etcd): the
			// versions of blind puts without a read back. A commit
			// that wrote nothing reports none (and no revision).
			if evs, err = rep.CommitReport(ctx, ops...); len(evs) > 0 {
				rev = evs[len(evs)-1].Revision
			}
		} else {
			rev, err = s.rv.CommitAt(ctx, ops...)
		}
		if err != nil {
			return 0, nil, nil, err
		}
		revs := make([]int64, len(ops))
		for i := range revs {
			revs[i] = rev
		}
		return len(ops), evs, revs, nil
	}
	var evs []store.Event
	var err error
	if rep, ok := s.back.(store.HintedReporter); ok {
		evs, err = rep.CommitReportHinted(ctx, hint, ops...)
	} else if rep, ok := s.back.(store.Reporter); ok {
		evs, err = rep.CommitReport(ctx, ops...)
	} else {
		err = s.back.Commit(ctx, ops...)
	}
	if err != nil {
		return 0, nil, nil, err
	}
	return len(ops), evs, nil, nil
}

// commitChain commits batches as a chain (store.CommitChain): how many
// batches were applied, the events of each (where the store reports
// them), and, where it does, each applied batch's revision.
func (s source) commitChain(ctx context.Context, hint store.Hint, chain string, batches [][]store.Op) (applied int, evs [][]store.Event, brevs []int64, err error) {
	if s.rv != nil {
		rep, _ := s.back.(store.Reporter)
		applied, brevs, evs, err = commitChainAt(ctx, s.rv, rep, batches)
		return applied, evs, brevs, err
	}
	applied, evs, err = store.CommitChain(ctx, s.back, hint, chain, batches)
	return applied, evs, nil, err
}

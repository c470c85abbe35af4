package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// allView is the scheduler's view of the store (layout.go): every
// namespace's tree at once, names as keys.
type allView struct{ kv store.KV }

var _ store.KV = allView{}

// namespaces lists the namespaces with a tree of their own (all but the
// default one).
func (v allView) namespaces(ctx context.Context) ([]string, error) {
	names, err := v.kv.Children(ctx, NamespacesPath)
	if err != nil {
		return nil, fmt.Errorf("registry: list the namespaces: %w", err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return n == namespace.Default }), nil
}

func (v allView) Get(ctx context.Context, p string) (store.Node, error) {
	pp, err := physical(p)
	if err != nil {
		return store.Node{}, err
	}
	n, err := v.kv.Get(ctx, pp)
	n.Path = p
	return n, err
}

// union reports whether a read of p gathers every namespace's: a
// namespaced root of the default layout, or a directory above one.
func union(p string) bool {
	return isRoot(p) || isAncestorOfRoot(p)
}

func (v allView) Children(ctx context.Context, p string) ([]string, error) {
	pp, err := physical(p)
	if err != nil {
		return nil, err
	}
	names, err := v.kv.Children(ctx, pp)
	if err != nil {
		return nil, err
	}
	if p == "/" || p == NamespacesPath {
		return names, nil
	}
	if pp != p { // one namespace's directory
		if ns := nsOfPath(p); namesAt(p) {
			for i, n := range names {
				names[i] = namespace.Key(ns, n)
			}
		}
		return names, nil
	}
	if !union(p) {
		return names, nil
	}
	nss, err := v.namespaces(ctx)
	if err != nil {
		return nil, err
	}
	qualify := namesAt(p)
	for _, ns := range nss {
		more, err := v.kv.Children(ctx, nsPath(ns)+p)
		if err != nil {
			return nil, err
		}
		for _, n := range more {
			if qualify {
				n = namespace.Key(ns, n)
			}
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func (v allView) List(ctx context.Context, p string) ([]store.Node, error) {
	pp, err := physical(p)
	if err != nil {
		return nil, err
	}
	nodes, err := v.kv.List(ctx, pp)
	if err != nil {
		return nil, err
	}
	if pp != p {
		return relabel(nodes), nil
	}
	if !union(p) || p == "/" {
		return nodes, nil
	}
	nss, err := v.namespaces(ctx)
	if err != nil || len(nss) == 0 {
		return nodes, err
	}
	if !isRoot(p) { // a directory above the roots: every namespace has its own copy
		return v.listAbove(ctx, p, nodes, nss)
	}
	// A root: each namespace's part is sorted by its names, and stays so
	// with the names qualified; the parts are merged, not sorted again.
	out := nodes
	for _, ns := range nss {
		more, err := v.kv.List(ctx, nsPath(ns)+p)
		if err != nil {
			return nil, err
		}
		if len(more) > 0 {
			out = mergeSorted(out, relabel(more))
		}
	}
	return out, nil
}

// mergeSorted merges two lists of nodes sorted by path.
func mergeSorted(a, b []store.Node) []store.Node {
	if len(a) == 0 {
		return b
	}
	out := make([]store.Node, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Path <= b[0].Path {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// listAbove lists a directory above the namespaced roots in every
// namespace, each directory once.
func (v allView) listAbove(ctx context.Context, p string, nodes []store.Node, nss []string) ([]store.Node, error) {
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		seen[n.Path] = true
	}
	for _, ns := range nss {
		more, err := v.kv.List(ctx, nsPath(ns)+p)
		if err != nil {
			return nil, err
		}
		for _, n := range relabel(more) {
			if !seen[n.Path] {
				seen[n.Path] = true
				nodes = append(nodes, n)
			}
		}
	}
	slices.SortFunc(nodes, func(a, b store.Node) int { return strings.Compare(a.Path, b.Path) })
	return nodes, nil
}

// relabel gives nodes of a namespace's tree their paths in the view
// (directories above its roots keep theirs: shared).
func relabel(nodes []store.Node) []store.Node {
	out := nodes[:0]
	for _, n := range nodes {
		if lp, ok := logical(n.Path); ok {
			n.Path = lp
			out = append(out, n)
		} else if rest, ok := strings.CutPrefix(n.Path, NamespacesPath+"/"); ok {
			if _, sub, ok := strings.Cut(rest, "/"); ok && (isAncestorOfRoot("/"+sub) || isRoot("/"+sub)) {
				n.Path = "/" + sub
				out = append(out, n)
			}
		}
	}
	return out
}

func (v allView) Commit(ctx context.Context, ops ...store.Op) error {
	mapped := make([]store.Op, len(ops))
	for i, op := range ops {
		pp, err := physical(op.Path)
		if err != nil {
			return err
		}
		op.Path = pp
		mapped[i] = op
	}
	return v.kv.Commit(ctx, mapped...)
}

// Watch follows p in every namespace when p gathers them all (union),
// else the one tree p is in.
func (v allView) Watch(ctx context.Context, p string) (<-chan store.Event, error) {
	pp, err := physical(p)
	if err != nil {
		return nil, err
	}
	if pp != p || !union(p) {
		return mapEvents(ctx, p, func(e store.Event) (store.Event, bool) {
			lp, ok := logical(e.Path)
			e.Path = lp
			return e, ok
		}, v.kv, pp)
	}
	return mapEvents(ctx, p, func(e store.Event) (store.Event, bool) {
		lp, ok := logical(e.Path)
		if !ok || (lp != p && !strings.HasPrefix(lp, strings.TrimSuffix(p, "/")+"/")) {
			return e, false
		}
		e.Path = lp
		return e, true
	}, v.kv, pp, NamespacesPath)
}

func (v allView) Close() error { return v.kv.Close() }

// mapEvents watches paths of kv and sends the events conv keeps, a
// resync as one of root. The channel closes when ctx ends or any of the
// watches does (the others are then ended too).
func mapEvents(ctx context.Context, root string, conv func(store.Event) (store.Event, bool), kv store.KV, paths ...string) (<-chan store.Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	srcs := make([]<-chan store.Event, len(paths))
	for i, p := range paths {
		ch, err := kv.Watch(ctx, p)
		if err != nil {
			cancel()
			return nil, err
		}
		srcs[i] = ch
	}
	out := make(chan store.Event, 64)
	var wg sync.WaitGroup
	for _, src := range srcs {
		wg.Go(func() {
			defer cancel()
			for ev := range src {
				if ev.Type == store.EventResync {
					ev.Path = root
				} else if e, ok := conv(ev); ok {
					ev = e
				} else {
					continue
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); cancel(); close(out) }()
	return out, nil
}

// nsView is one namespace's view of the store (layout.go): its tree as
// if it were the root, with its own names.
type nsView struct {
	kv store.KV
	ns string
}

var _ store.KV = nsView{}

func (v nsView) unmap(p string) string {
	if rest, ok := strings.CutPrefix(p, nsPath(v.ns)); ok && strings.HasPrefix(rest, "/") {
		return rest
	}
	return p
}

func (v nsView) Get(ctx context.Context, p string) (store.Node, error) {
	n, err := v.kv.Get(ctx, scoped(v.ns, p))
	n.Path = p
	return n, err
}

func (v nsView) Children(ctx context.Context, p string) ([]string, error) {
	return v.kv.Children(ctx, scoped(v.ns, p))
}

func (v nsView) List(ctx context.Context, p string) ([]store.Node, error) {
	nodes, err := v.kv.List(ctx, scoped(v.ns, p))
	for i := range nodes {
		nodes[i].Path = v.unmap(nodes[i].Path)
	}
	return nodes, err
}

// Commit applies ops if the namespace still exists (its record is
// checked in the same commit, so no write recreates a namespace deleted
// meanwhile).
func (v nsView) Commit(ctx context.Context, ops ...store.Op) error {
	mapped := make([]store.Op, 1, len(ops)+1)
	mapped[0] = store.Check(nsPath(v.ns), store.AnyVersion) // first: the writes below would make it
	for _, op := range ops {
		if strings.Contains(op.Path, namespace.Sep) {
			return fmt.Errorf("%w: %s: a namespace's view has no keys of other namespaces", store.ErrBadPath, op.Path)
		}
		op.Path = scoped(v.ns, op.Path)
		mapped = append(mapped, op)
	}
	if err := v.kv.Commit(ctx, mapped...); err != nil {
		if _, gerr := v.kv.Get(ctx, nsPath(v.ns)); errors.Is(gerr, store.ErrNotFound) {
			return fmt.Errorf("%w: namespace '%s' was deleted", errNoNamespace, v.ns)
		}
		return err
	}
	return nil
}

func (v nsView) Watch(ctx context.Context, p string) (<-chan store.Event, error) {
	return mapEvents(ctx, p, func(e store.Event) (store.Event, bool) {
		e.Path = v.unmap(e.Path)
		return e, true
	}, v.kv, scoped(v.ns, p))
}

// Close does not close the store the view shares.
func (v nsView) Close() error { return nil }

// errNoNamespace: a write to a namespace deleted meanwhile.
var errNoNamespace = ErrNamespaceNotFound

// CommitChain commits a chain of batches (store.Chainer) through the
// view, so that a chain on the scheduler's view keeps the store's own
// pipelining (ZooKeeper's multis sent back to back) instead of falling
// back to one commit. A hint is dropped: it speaks of the view's paths,
// and it only saves the store reads.
func (v allView) CommitChain(ctx context.Context, _ store.Hint, chain string, batches [][]store.Op) (int, [][]store.Event, error) {
	mapped, err := mapBatches(batches, physical)
	if err != nil {
		return 0, nil, err
	}
	pchain, err := physical(chain)
	if err != nil {
		return 0, nil, err
	}
	applied, evs, err := store.CommitChain(ctx, v.kv, nil, pchain, mapped)
	return applied, mapChainEvents(evs, logical), err
}

var _ store.Chainer = allView{}

// mapBatches maps every op's path of a chain's batches with to.
func mapBatches(batches [][]store.Op, to func(string) (string, error)) ([][]store.Op, error) {
	out := make([][]store.Op, len(batches))
	for i, b := range batches {
		out[i] = make([]store.Op, len(b))
		for j, op := range b {
			p, err := to(op.Path)
			if err != nil {
				return nil, err
			}
			op.Path = p
			out[i][j] = op
		}
	}
	return out, nil
}

// mapChainEvents maps a chain's events back to the view's paths, leaving
// out those the view does not show.
func mapChainEvents(evs [][]store.Event, to func(string) (string, bool)) [][]store.Event {
	for i, b := range evs {
		out := b[:0]
		for _, e := range b {
			if p, ok := to(e.Path); ok {
				e.Path = p
				out = append(out, e)
			}
		}
		evs[i] = out
	}
	return evs
}

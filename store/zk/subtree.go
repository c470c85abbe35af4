package zk

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/internal/parallel"
	"github.com/ejcloud/elasticjob/store"
)

var _ store.SubtreeReader = (*Store)(nil)

// subtreeParallel bounds the reads in flight while reading a subtree.
const subtreeParallel = 64

// Subtree returns path and every node below it (store.SubtreeReader), in
// no particular order; nothing if path is missing. It lists only the nodes
// whose stat says they have children, so a subtree of N nodes, most of
// them leaves, costs about N reads (List by List costs 2N: a listing of
// every leaf too), subtreeParallel at once. Like List it is not a
// snapshot: nodes created or deleted while it reads may or may not be in it.
func (s *Store) Subtree(ctx context.Context, path string) ([]store.Node, error) {
	if err := s.check(path); err != nil {
		return nil, fmt.Errorf("zk store subtree %q: %w", path, err)
	}
	type read struct {
		node store.Node
		kids int32
		err  error
	}
	get := func(p string) read {
		n, kids, err := s.getStat(ctx, p)
		return read{node: n, kids: kids, err: err}
	}
	var out []store.Node
	var dirs []string
	if path == "/" {
		dirs = []string{"/"}
	} else {
		r := get(path)
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			return nil, nil
		case r.err != nil:
			return nil, opErr("subtree", path, r.err)
		}
		out = append(out, r.node)
		if r.kids > 0 {
			dirs = []string{path}
		}
	}
	for len(dirs) > 0 {
		names := make([][]string, len(dirs))
		errs := make([]error, len(dirs))
		parallel.For(len(dirs), subtreeParallel, func(i int) {
			names[i], errs[i] = call(ctx, func() ([]string, error) {
				n, _, err := s.conn.Children(s.zpath(dirs[i]))
				return n, err
			})
		})
		var next []string
		for i, d := range dirs {
			if errs[i] != nil && !errors.Is(errs[i], zk.ErrNoNode) {
				return nil, opErr("subtree", d, errs[i])
			}
			for _, n := range names[i] {
				next = append(next, store.Join(d, n))
			}
		}
		reads := make([]read, len(next))
		parallel.For(len(next), subtreeParallel, func(i int) { reads[i] = get(next[i]) })
		dirs = dirs[:0]
		for i, r := range reads {
			switch {
			case errors.Is(r.err, zk.ErrNoNode): // deleted since the listing
			case r.err != nil:
				return nil, opErr("subtree", next[i], r.err)
			default:
				out = append(out, r.node)
				if r.kids > 0 {
					dirs = append(dirs, r.node.Path)
				}
			}
		}
	}
	return out, nil
}

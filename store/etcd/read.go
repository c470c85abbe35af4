package etcd

import (
	"context"
	"fmt"
	"sort"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/ejcloud/elasticjob/store"
)

// probeDepths is how many levels below a deleted node one read probes.
const probeDepths = 8

// srvNode is a node as the commit's snapshot read it.
type srvNode struct {
	exists  bool
	version int64
	value   []byte
	mod     int64 // etcd mod_revision (0: absent)
	create  int64 // etcd create_revision (0: absent)
}

// snapshot is what a commit read, all at one revision.
type snapshot struct {
	rev        int64
	guardMod   int64
	guardLease int64 // the lease of the guard key: a commit holds it (lock.go)
	nodes      map[string]srvNode
	// levels of a deleted node: the depths below it that hold nodes
	// (ascending), and the first depth that holds none.
	levels map[string][]int
	empty  map[string]int
	local  bool // read serializably from the client's member (read)
}

// read takes the snapshot a commit of ops is planned from: every op's
// node, the ancestors of what it creates, the guard key, and the levels
// below every node it deletes (count-only ranges, probeDepths at a time,
// until an empty one: a tree has no node below a level with none). The
// reads go in read-only transactions of at most maxOps each; the first
// fixes the revision and the others read at it, concurrently.
//
// A local read (fresh false) is serializable: the member the client talks
// to answers from what it has applied, with no raft round trip (a
// linearizable read waits for the raft leader to confirm its leadership
// with a quorum, and for the member to apply up to that point). The
// commit's compares then decide as they do for a fresh snapshot that
// another writer overtook.
func (s *Store) read(ctx context.Context, ops []store.Op, fresh bool) (*snapshot, error) {
	sn := &snapshot{nodes: map[string]srvNode{}, levels: map[string][]int{}, empty: map[string]int{}, local: !fresh}
	var paths, dels []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "/" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	delSeen := map[string]bool{}
	for _, op := range ops {
		add(op.Path)
		switch op.Kind {
		case store.OpCreate, store.OpPut:
			for a := store.Parent(op.Path); a != "/"; a = store.Parent(a) {
				add(a)
			}
		case store.OpDelete:
			if !delSeen[op.Path] {
				delSeen[op.Path] = true
				dels = append(dels, op.Path)
			}
		}
	}
	type probe struct {
		path  string
		depth int
	}
	var reqs []readReq
	var what []any // string: a node's path; probe: a level; nil: the guard
	reqs = append(reqs, readReq{key: s.k.guard})
	what = append(what, nil)
	for _, p := range paths {
		reqs = append(reqs, readReq{key: s.k.node(p)})
		what = append(what, p)
	}
	probeFrom := func(p string, from int) {
		for d := from; d < from+probeDepths; d++ {
			reqs = append(reqs, readReq{key: s.k.level(p, d), count: true})
			what = append(what, probe{p, d})
		}
	}
	for _, p := range dels {
		probeFrom(p, depth(p)+1)
	}
	for len(reqs) > 0 {
		resps, err := s.readAt(ctx, sn, reqs)
		if err != nil {
			return nil, err
		}
		pending := map[string]int{} // deleted path → the deepest level probed, while all held nodes
		for i, r := range resps {
			rr := r.GetResponseRange()
			switch w := what[i].(type) {
			case nil:
				if len(rr.Kvs) > 0 {
					sn.guardMod, sn.guardLease = rr.Kvs[0].ModRevision, rr.Kvs[0].Lease
				}
			case string:
				n := srvNode{}
				if len(rr.Kvs) > 0 {
					kv := rr.Kvs[0]
					v, val, err := decode(kv.Value)
					if err != nil {
						return nil, fmt.Errorf("etcd store commit: read %s: %w", w, err)
					}
					n = srvNode{exists: true, version: v, value: val, mod: kv.ModRevision, create: kv.CreateRevision}
				}
				sn.nodes[w] = n
			case probe:
				if _, done := sn.empty[w.path]; done {
					continue
				}
				if rr.Count == 0 {
					sn.empty[w.path] = w.depth
					continue
				}
				sn.levels[w.path] = append(sn.levels[w.path], w.depth)
				pending[w.path] = w.depth
			}
		}
		reqs, what = nil, nil
		for p, d := range pending {
			if _, done := sn.empty[p]; !done {
				probeFrom(p, d+1)
			}
		}
	}
	for _, d := range sn.levels {
		sort.Ints(d)
	}
	return sn, nil
}

// readReq is one read of a commit's snapshot: a key, or the count of
// the keys under a prefix.
type readReq struct {
	key      string
	keysOnly bool
	count    bool // count the keys that start with key
}

func (r readReq) op(rev int64, local bool) clientv3.Op {
	var opts []clientv3.OpOption
	if local {
		opts = append(opts, clientv3.WithSerializable())
	}
	if r.keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	if r.count {
		opts = append(opts, clientv3.WithPrefix(), clientv3.WithCountOnly())
	}
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	return clientv3.OpGet(r.key, opts...)
}

// readAt runs read-only requests in transactions of at most maxOps,
// all at the snapshot's revision (the first one fixes it).
func (s *Store) readAt(ctx context.Context, sn *snapshot, reqs []readReq) ([]*pb.ResponseOp, error) {
	out := make([]*pb.ResponseOp, len(reqs))
	run := func(ctx context.Context, from, to int) error {
		batch := make([]clientv3.Op, to-from)
		for i, r := range reqs[from:to] {
			batch[i] = r.op(sn.rev, sn.local)
		}
		resp, err := retryRead(ctx, func() (*clientv3.TxnResponse, error) { return s.cli.Txn(ctx).Then(batch...).Commit() })
		if err != nil {
			return s.fail(ctx, "commit", "(read)", err)
		}
		if sn.rev == 0 {
			sn.rev = resp.Header.Revision
		}
		copy(out[from:to], resp.Responses)
		return nil
	}
	if sn.local && sn.rev == 0 && s.lagAt != nil {
		sn.rev = s.lagAt() // tests: a member that has applied only up to there
	}
	first := 0
	if sn.rev == 0 {
		first = min(len(reqs), s.maxOps)
		if err := run(ctx, 0, first); err != nil {
			return nil, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for from := first; from < len(reqs); from += s.maxOps {
		to := min(len(reqs), from+s.maxOps)
		g.Go(func() error { return run(gctx, from, to) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

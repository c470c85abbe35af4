package zk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/internal/parallel"
	"github.com/ejcloud/elasticjob/store"
)

// commitAttempts bounds how often a commit is re-planned when the tree
// changed between its reads and its multi.
const commitAttempts = 16

// assumeDepth is how deep an optimistic plan assumes ancestors exist.
const assumeDepth = 2

// errReplan marks a multi that failed on an op planned from a stale read.
var errReplan = errors.New("zk store: tree changed during commit")

var _ store.HintedReporter = (*Store)(nil)

// Commit applies ops atomically as one ZooKeeper multi.
func (s *Store) Commit(ctx context.Context, ops ...store.Op) error {
	_, err := s.CommitReport(ctx, ops...)
	return err
}

// CommitReport is Commit, returning the events the multi produced
// (store.Reporter): every node it created (version 0) or wrote (the new
// version from the multi's reply), and every node it deleted, in order.
func (s *Store) CommitReport(ctx context.Context, ops ...store.Op) ([]store.Event, error) {
	return s.CommitReportHinted(ctx, nil, ops...)
}

// CommitReportHinted is CommitReport planned from hint where it has a
// belief (store.HintedReporter): the first plan takes from it what it
// would read (whether a node exists; a node's children, when it says the
// node exists), and a step planned from it that the multi refuses makes
// the commit planned again from reads, like a step planned from a stale
// read. A belief that a node is absent is not trusted for a Delete (a
// skipped delete would not be checked by the multi): that is read.
func (s *Store) CommitReportHinted(ctx context.Context, hint store.Hint, ops ...store.Op) ([]store.Event, error) {
	if err := s.validOps(ops); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	optimistic := true
	for range commitAttempts {
		evs, err := s.commitOnce(ctx, ops, optimistic, hint)
		if !errors.Is(err, errReplan) {
			return evs, err
		}
		optimistic, hint = false, nil
		s.log.Debug("commit re-planned", "subsystem", "zkstore", "err", err)
	}
	return nil, fmt.Errorf("zk store commit: gave up after %d attempts: %w", commitAttempts, store.ErrConflict)
}

// validOps checks that the store is open and every op is well formed.
func (s *Store) validOps(ops []store.Op) error {
	if err := s.check("/"); err != nil {
		return fmt.Errorf("zk store commit: %w", err)
	}
	for _, op := range ops {
		if op.Kind < store.OpCreate || op.Kind > store.OpCheck {
			return fmt.Errorf("zk store %s %s: unknown op kind: %w", op.Kind.String(), op.Path, store.ErrBadPath)
		}
		if err := store.ValidatePath(op.Path); err != nil {
			return fmt.Errorf("zk store %s: %w", op.Kind.String(), err)
		}
		if op.Path == "/" && op.Kind != store.OpCheck {
			return fmt.Errorf("zk store %s /: the root is not writable: %w", op.Kind.String(), store.ErrBadPath)
		}
	}
	return nil
}

// step is one request of the multi and where it came from.
type step struct {
	req     any
	op      store.Op // the user's op it serves
	planned bool     // derived from a read: its failure means re-plan
	assumed bool     // a create whose parent was assumed to exist: ErrNoNode means re-plan
	guard   bool     // part of a guard that a node read as absent still is (plan.delete): no event
}

// plan turns a batch into multi requests, reading what it must.
//
// The first plan of a commit is optimistic: a create's ancestors up to
// assumeDepth segments deep (a registry's skeleton: /config/job,
// /state/ready) are assumed to exist unless an earlier op of the batch
// deleted one, which spares a read of each before the multi, one round
// trip each. Deeper ancestors (a job's directory of running shards, which
// comes and goes) are read as before.
// If a create then fails for a missing parent, nothing was applied (a
// multi is all or nothing) and the commit is planned again with every
// ancestor read.
type plan struct {
	s          *Store
	ctx        context.Context
	optimistic bool
	hint       store.Hint          // beliefs to plan from before reading (first plan only)
	overlay    map[string]bool     // store path → exists after the batch's earlier steps
	server     map[string]bool     // store path → existed on the server when prefetched
	children   map[string][]string // store path → its children's names on the server when prefetched
	hinted     map[string]bool     // store paths whose server state came from the hint, not a read
	steps      []step
}

// prefetch reads, concurrently (parallel.For), what the plan of the batch would
// otherwise read one round trip after another: whether the nodes its Puts
// name exist (a Put is a create or a set), whether the ancestors of what it
// creates exist below the depth an optimistic plan assumes, and the
// children of what it deletes (which also says whether they exist). A
// launch round's commit (a thousand running entries, dequeues and waiting
// reasons) then costs a few round trips instead of thousands. A node that
// changes between these reads and the multi fails the multi's planned
// step and the commit is planned again.
func (p *plan) prefetch(ops []store.Op) error {
	type read struct {
		path  string
		kids  bool // list the children (a Delete), not only whether it exists
		found bool
		names []string
		err   error
	}
	var reads []read
	seen := map[string]bool{}
	p.server, p.children, p.hinted = map[string]bool{}, map[string][]string{}, map[string]bool{}
	add := func(path string, kids bool) {
		if path == "/" || seen[path] {
			return
		}
		seen[path] = true
		if p.hint != nil {
			if ok, names, known := p.hint(path, kids); known && (ok || !kids) {
				p.server[path], p.hinted[path] = ok, true
				if kids {
					p.children[path] = names
				}
				return
			}
		}
		reads = append(reads, read{path: path, kids: kids})
	}
	for _, op := range ops {
		switch op.Kind {
		case store.OpPut, store.OpCreate:
			if op.Kind == store.OpPut {
				add(op.Path, false)
			}
			for _, a := range ancestors(op.Path) {
				if !p.optimistic || strings.Count(a, "/") > assumeDepth {
					add(a, false)
				}
			}
		case store.OpDelete:
			add(op.Path, true)
		}
	}
	if len(reads) < 2 {
		return nil
	}
	parallel.For(len(reads), readParallel, func(i int) {
		r := &reads[i]
		z := p.s.zpath(r.path)
		if r.kids {
			r.names, r.err = call(p.ctx, func() ([]string, error) {
				n, _, err := p.s.conn.Children(z)
				return n, err
			})
			r.found = r.err == nil
			if errors.Is(r.err, zk.ErrNoNode) {
				r.err = nil
			}
			return
		}
		r.found, r.err = call(p.ctx, func() (bool, error) {
			ok, _, err := p.s.conn.Exists(z)
			return ok, err
		})
	})
	for _, r := range reads {
		if r.err != nil {
			return r.err
		}
		p.server[r.path] = r.found
		if r.kids && r.found {
			p.children[r.path] = r.names
		}
	}
	return nil
}

// commitErr words a failure of the commit as a whole, with its store
// sentinel (ErrUnavailable, …) where it has one.
func commitErr(err error) error {
	if sentinel := sentinelOf(err); sentinel != nil {
		return fmt.Errorf("zk store commit: %w (%w)", sentinel, err)
	}
	return fmt.Errorf("zk store commit: %w", err)
}

// beforeMulti, set by tests only, runs between a commit's plan and its
// multi (another writer's change landing in between).
var beforeMulti func()

func (s *Store) commitOnce(ctx context.Context, ops []store.Op, optimistic bool, hint store.Hint) ([]store.Event, error) {
	p := &plan{s: s, ctx: ctx, optimistic: optimistic, hint: hint, overlay: map[string]bool{}}
	if err := p.prefetch(ops); err != nil {
		return nil, commitErr(err)
	}
	for _, op := range ops {
		if err := p.add(op); err != nil {
			return nil, opErr(op.Kind.String(), op.Path, err)
		}
	}
	if len(p.steps) == 0 {
		return nil, nil
	}
	reqs := make([]any, len(p.steps))
	for i, st := range p.steps {
		reqs[i] = st.req
	}
	conn := s.commitConn(ctx)
	if beforeMulti != nil {
		beforeMulti()
	}
	res, err := call(ctx, func() ([]zk.MultiResponse, error) { return conn.Multi(reqs...) })
	if err == nil {
		return s.events(p.steps, res), nil
	}
	for i, r := range res {
		if r.Error == nil || i >= len(p.steps) {
			continue
		}
		return nil, stepErr(p.steps[i], r.Error)
	}
	return nil, commitErr(err)
}

// stepErr words the failure of one step of a multi: errReplan when the
// step was planned from a read or a belief that the multi proved stale,
// else the op's own error.
func stepErr(st step, err error) error {
	if st.planned || errors.Is(err, zk.ErrNotEmpty) || (st.assumed && errors.Is(err, zk.ErrNoNode)) ||
		(st.op.Kind == store.OpDelete && st.op.Version == store.AnyVersion && errors.Is(err, zk.ErrNoNode)) {
		return fmt.Errorf("%w: %s %s: %w", errReplan, st.op.Kind.String(), st.op.Path, err)
	}
	return opErr(st.op.Kind.String(), st.op.Path, err)
}

// events are what a successful multi did, from its requests and replies
// (a reply without a stat gives no event for a write: the cache then reads
// the node back).
func (s *Store) events(steps []step, res []zk.MultiResponse) []store.Event {
	out := make([]store.Event, 0, len(steps))
	for i, st := range steps {
		if st.guard {
			continue
		}
		switch req := st.req.(type) {
		case *zk.CreateRequest:
			if p, ok := s.spath(req.Path); ok {
				out = append(out, store.Event{Type: store.EventPut, Path: p})
			}
		case *zk.SetDataRequest:
			if p, ok := s.spath(req.Path); ok && i < len(res) && res[i].Stat != nil {
				out = append(out, store.Event{Type: store.EventPut, Path: p, Version: int64(res[i].Stat.Version)})
			}
		case *zk.DeleteRequest:
			if p, ok := s.spath(req.Path); ok {
				out = append(out, store.Event{Type: store.EventDelete, Path: p})
			}
		}
	}
	return out
}

func (p *plan) exists(path string) (bool, error) {
	if path == "/" {
		return true, nil
	}
	if v, ok := p.overlay[path]; ok {
		return v, nil
	}
	if v, ok := p.server[path]; ok {
		return v, nil
	}
	ok, err := call(p.ctx, func() (bool, error) {
		ok, _, err := p.s.conn.Exists(p.s.zpath(path))
		return ok, err
	})
	return ok, err
}

func (p *plan) push(op store.Op, planned bool, req any) {
	p.steps = append(p.steps, step{req: req, op: op, planned: planned})
}

func zver(v int64) int32 {
	if v == store.AnyVersion {
		return -1
	}
	return int32(v)
}

func (p *plan) add(op store.Op) error {
	z := p.s.zpath(op.Path)
	switch op.Kind {
	case store.OpCreate:
		assumed, err := p.ancestors(op)
		if err != nil {
			return err
		}
		p.push(op, false, &zk.CreateRequest{Path: z, Data: op.Value, Acl: p.s.acl})
		p.steps[len(p.steps)-1].assumed = assumed
		p.overlay[op.Path] = true
	case store.OpPut:
		ok, err := p.exists(op.Path)
		if err != nil {
			return err
		}
		if ok {
			p.push(op, true, &zk.SetDataRequest{Path: z, Data: op.Value, Version: -1})
			break
		}
		if _, err := p.ancestors(op); err != nil {
			return err
		}
		p.push(op, true, &zk.CreateRequest{Path: z, Data: op.Value, Acl: p.s.acl})
		p.overlay[op.Path] = true
	case store.OpSet:
		p.push(op, false, &zk.SetDataRequest{Path: z, Data: op.Value, Version: zver(op.Version)})
	case store.OpCheck:
		p.push(op, false, &zk.CheckVersionRequest{Path: z, Version: zver(op.Version)})
	case store.OpDelete:
		return p.delete(op)
	}
	return nil
}

// ancestors adds creates for op's missing ancestors, top down. An
// optimistic plan reads none: it creates only those the batch deleted,
// and reports that it assumed the others exist.
func (p *plan) ancestors(op store.Op) (assumed bool, err error) {
	for _, a := range ancestors(op.Path) {
		var ok bool
		if v, known := p.overlay[a]; p.optimistic && !known && strings.Count(a, "/") <= assumeDepth {
			assumed = true
			continue
		} else if known {
			ok = v
		} else if ok, err = p.exists(a); err != nil {
			return false, err
		} else if ok && p.hinted[a] {
			assumed = true // believed, not read: a missing parent means re-plan
		}
		if !ok {
			p.push(op, true, &zk.CreateRequest{Path: p.s.zpath(a), Acl: p.s.acl})
			p.overlay[a] = true
		}
	}
	return assumed, nil
}

// delete adds deletes for op's subtree, every node after its descendants.
//
// A delete of any version of a node read as absent is a guard that it
// still is, where its parent exists: a create of it and a delete, both
// planned (a node created since the read fails the create, and the commit
// is planned again, deleting it). Without it a create landing between the
// read and the multi survived a commit that was to delete it (a fire's
// ready entry, created just before a cron update's commit, would run the
// old cron's instant after the update was answered). Absent because an earlier step of the batch deletes it, the
// node needs no guard: that step is in the multi.
func (p *plan) delete(op store.Op) error {
	ok, err := p.exists(op.Path)
	if err != nil {
		return err
	}
	if !ok && op.Version == store.AnyVersion {
		if _, inBatch := p.overlay[op.Path]; inBatch || op.Path == "/" {
			return nil
		}
		parent, err := p.exists(store.Parent(op.Path))
		if err != nil || !parent {
			return err
		}
		z := p.s.zpath(op.Path)
		p.steps = append(p.steps, step{req: &zk.CreateRequest{Path: z, Data: []byte{}, Acl: p.s.acl}, op: op, planned: true, guard: true},
			step{req: &zk.DeleteRequest{Path: z, Version: -1}, op: op, planned: true, guard: true})
		p.overlay[op.Path] = false
		return nil
	}
	var desc []string
	if ok {
		if desc, err = p.descendants(op.Path); err != nil {
			return err
		}
	}
	slices.Sort(desc)
	slices.Reverse(desc)
	for _, d := range desc {
		p.push(op, true, &zk.DeleteRequest{Path: p.s.zpath(d), Version: -1})
		p.overlay[d] = false
	}
	p.push(op, false, &zk.DeleteRequest{Path: p.s.zpath(op.Path), Version: zver(op.Version)})
	p.overlay[op.Path] = false
	return nil
}

// descendants lists path's subtree (without path) as it stands after the
// batch's earlier steps: the server's nodes not deleted by them, plus the
// nodes they created.
func (p *plan) descendants(path string) ([]string, error) {
	seen := map[string]bool{}
	queue := []string{path}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		names, prefetched := p.children[dir]
		var err error
		if !prefetched {
			names, err = call(p.ctx, func() ([]string, error) {
				n, _, err := p.s.conn.Children(p.s.zpath(dir))
				return n, err
			})
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		for _, n := range names {
			c := store.Join(dir, n)
			seen[c] = true
			queue = append(queue, c)
		}
	}
	var out []string
	for c := range seen {
		if v, ok := p.overlay[c]; !ok || v {
			out = append(out, c)
		}
	}
	for c, v := range p.overlay {
		if v && c != path && store.Under(c, path) && !seen[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

package zk

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/store"
)

var _ store.Chainer = (*Store)(nil)

// chainWrap: a chain node past this version is deleted and created again
// (version 0) by the next batch instead of set, far below the int32 limit.
var chainWrap int32 = 1 << 30

// CommitChain applies batches as pipelined multis (store.Chainer): all of
// them are planned at once (a batch's plan sees the earlier batches'
// writes), queued on the session back to back, and their replies read in
// order, so a chain costs about one round trip instead of one per batch.
// Each multi also sets the chain node at the version the one before it
// left, so a multi applies only if every multi before it did: ZooKeeper
// answers a session's requests in order, and a failed multi leaves the
// chain node as it was. A multi refused for a step planned from a stale
// read or belief makes the rest of the chain planned again from reads.
func (s *Store) CommitChain(ctx context.Context, hint store.Hint, chain string, batches [][]store.Op) (int, [][]store.Event, error) {
	if err := store.ValidatePath(chain); err != nil || chain == "/" {
		return 0, nil, fmt.Errorf("zk store commit chain %q: %w", chain, store.ErrBadPath)
	}
	for _, b := range batches {
		if err := s.validOps(b); err != nil {
			return 0, nil, err
		}
	}
	applied, optimistic := 0, true
	var evs [][]store.Event
	for range commitAttempts {
		n, e, err := s.chainOnce(ctx, chain, batches[applied:], optimistic, hint)
		applied, evs = applied+n, append(evs, e...)
		if !errors.Is(err, errReplan) {
			return applied, evs, err
		}
		optimistic, hint = false, nil
		s.log.Debug("commit chain re-planned", "subsystem", "zkstore", "applied", applied, "err", err)
	}
	return applied, evs, fmt.Errorf("zk store commit chain: gave up after %d attempts: %w", commitAttempts, store.ErrConflict)
}

// queued is one batch's multi in flight.
type queued struct {
	batch int
	links int    // chain requests at the front of reqs
	steps []step // the batch's steps, after them
	reply <-chan zkReply
	res   *multiReply
}

// chainOnce plans and sends batches once; it returns how many were
// applied, their events, and the first failure.
func (s *Store) chainOnce(ctx context.Context, chain string, batches [][]store.Op, optimistic bool, hint store.Hint) (int, [][]store.Event, error) {
	version, err := s.chainVersion(ctx, chain)
	if err != nil {
		return 0, nil, commitErr(err)
	}
	p := &plan{s: s, ctx: ctx, optimistic: optimistic, hint: hint, overlay: map[string]bool{}}
	var all []store.Op
	for _, b := range batches {
		all = append(all, b...)
	}
	if err := p.prefetch(all); err != nil {
		return 0, nil, commitErr(err)
	}
	bounds := make([]int, len(batches)+1)
	for i, b := range batches {
		for _, op := range b {
			if err := p.add(op); err != nil {
				return 0, nil, opErr(op.Kind.String(), op.Path, err)
			}
		}
		bounds[i+1] = len(p.steps)
	}
	z := s.zpath(chain)
	var sent []queued
	for i := range batches {
		steps := p.steps[bounds[i]:bounds[i+1]]
		if len(steps) == 0 {
			continue
		}
		var reqs []any
		if version >= chainWrap {
			reqs = append(reqs, &zk.DeleteRequest{Path: z, Version: version}, &zk.CreateRequest{Path: z, Data: []byte{}, Acl: s.acl})
			version = 0
		} else {
			reqs = append(reqs, &zk.SetDataRequest{Path: z, Data: []byte{}, Version: version})
			version++
		}
		q := queued{batch: i, links: len(reqs), steps: steps}
		for _, st := range steps {
			reqs = append(reqs, st.req)
		}
		q.reply, q.res = s.queueMulti(reqs)
		sent = append(sent, q)
	}
	evs := make([][]store.Event, 0, len(batches))
	done := 0 // batches applied, the empty ones included
	for _, q := range sent {
		var rep zkReply
		select {
		case rep = <-q.reply:
		case <-ctx.Done():
			s.forgetChain(chain)
			return done, evs, fmt.Errorf("zk store commit chain: %w", ctx.Err())
		}
		if rep.err != nil {
			s.forgetChain(chain)
			for ; done < q.batch; done++ { // the empty batches before it
				evs = append(evs, nil)
			}
			return done, evs, s.chainErr(q, rep.err)
		}
		for ; done < q.batch; done++ {
			evs = append(evs, nil)
		}
		evs = append(evs, s.events(q.steps, q.res.res[min(q.links, len(q.res.res)):]))
		done++
	}
	for ; done < len(batches); done++ {
		evs = append(evs, nil)
	}
	s.setChain(chain, version)
	return done, evs, nil
}

// chainErr words why a batch's multi failed: its chain link (another
// writer moved the chain node, or the cached version was stale: plan
// again), one of its steps, or the connection.
func (s *Store) chainErr(q queued, err error) error {
	for i, r := range q.res.res {
		if r.Error == nil {
			continue
		}
		if i < q.links {
			return fmt.Errorf("%w: the chain node moved: %w", errReplan, r.Error)
		}
		if i-q.links < len(q.steps) {
			return stepErr(q.steps[i-q.links], r.Error)
		}
	}
	return commitErr(err)
}

// chainVersion is the chain node's version (created if missing), as the
// last chain left it or read.
func (s *Store) chainVersion(ctx context.Context, chain string) (int32, error) {
	s.mu.Lock()
	v, ok := s.chains[chain]
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	st, err := s.exists(ctx, s.zpath(chain), nil)
	if errors.Is(err, zk.ErrNoNode) {
		if err := s.ensure(ctx, s.zpath(chain)); err != nil {
			return 0, err
		}
		st, err = s.exists(ctx, s.zpath(chain), nil)
	}
	if err != nil {
		return 0, err
	}
	return st.Version, nil
}

func (s *Store) setChain(chain string, v int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chains == nil {
		s.chains = map[string]int32{}
	}
	s.chains[chain] = v
}

func (s *Store) forgetChain(chain string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.chains, chain)
}

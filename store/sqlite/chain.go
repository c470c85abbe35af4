package sqlite

import (
	"context"
	"fmt"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// A chain (store.Chainer) is applied by the writer link by link, in
// order, each only if every link before it was. Its links share one
// transaction, and so one fsync, until an urgent commit (store.Urgent: the
// producer's fires, the API's writes) waits: then the transaction is
// committed after the link being applied, the urgent commits go as a group
// of their own, and the chain goes on in a new transaction. An urgent
// commit so waits behind one link of a chain, not behind the whole of it:
// a launch round recorded as one commit of 8,192 tasks held the store for
// 2-4 s on an overloaded machine, and the fire commits queued behind it
// came seconds late; cut into links of a few hundred launches
// (cmd/scheduler), the round holds a fire back for one link's apply. When
// nothing urgent waits a chain costs what one commit of its links did.
// Other commits wait for the chain, as they waited for a commit.
//
// An urgent commit that goes between two links may change what a later
// link is conditional on (a job's ready entry the link dequeues): that
// link fails, and the links after it are not applied (the launcher
// launches what the links before it recorded; launchchain.go). It also
// answers before the chain: the scheduler's copy of the registry
// (store/cache), which puts a chain's writes in when the chain answers,
// re-reads a path such a commit wrote meanwhile instead (a link's delete
// of a ready entry the urgent commit made anew would otherwise hide it).

var _ store.Chainer = (*Store)(nil)

// CommitChain commits batches as a chain (store.Chainer): in order, each
// atomically, each only if every batch before it was applied. chain and
// hint are not needed here: one writer applies the batches in order.
func (s *Store) CommitChain(ctx context.Context, _ store.Hint, _ string, batches [][]store.Op) (int, [][]store.Event, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, fmt.Errorf("sqlite store: commit chain: %w", err)
	}
	for i, b := range batches {
		if err := memory.CheckOps(b); err != nil {
			return 0, nil, fmt.Errorf("sqlite store: commit chain: batch %d: %w", i, err)
		}
	}
	if err := s.checkOpen("commit chain", ""); err != nil {
		return 0, nil, err
	}
	if len(batches) == 0 {
		return 0, nil, nil
	}
	req := &request{ctx: ctx, done: make(chan error, 1), urgent: store.IsUrgent(ctx), chain: true, links: batches}
	if err := s.submit(req); err != nil {
		return 0, nil, fmt.Errorf("sqlite store: commit chain: %w", err)
	}
	err := <-req.done // the writer has the request and always answers it
	if err != nil {
		err = fmt.Errorf("sqlite store: commit chain: %w", err)
	}
	return len(req.linked), req.linked, err
}

// commitChain applies r's links (linkTx), letting the urgent commits that
// wait go between two transactions, until every link is applied or one
// failed. Each transaction's events are published as it commits, before
// anything else is. A transaction that finds the disk full is tried once
// more when Options.OnFull frees space, as a group is.
func (s *Store) commitChain(w *writer, r *request) {
	full := false
	for {
		evs, opErr, dbErr := s.linkTx(w, r)
		if dbErr != nil {
			if isFull(dbErr) && !full && s.opts.OnFull != nil && s.opts.OnFull() {
				full = true
				continue
			}
			r.done <- dbErr
			return
		}
		var flat []store.Event
		for _, e := range evs {
			flat = append(flat, e...)
		}
		s.hub.Publish(flat)
		r.linked = append(r.linked, evs...)
		if opErr != nil || len(r.linked) == len(r.links) {
			r.done <- opErr
			return
		}
		if group := s.gather(nil, false); len(group) > 0 {
			s.commitGroup(w, group)
		}
	}
}

// linkTx applies r's links from the first not yet applied in one
// transaction, until the last, a failed one, or (after one link at least)
// an urgent commit waiting. It returns the events of each link it
// committed, the error that ends the chain (an op's, or r's context
// ending), or the database error that rolled the transaction back.
func (s *Store) linkTx(w *writer, r *request) (evs [][]store.Event, opErr, dbErr error) {
	fail := func(err error) ([][]store.Event, error, error) {
		_ = w.exec("ROLLBACK")
		return nil, nil, err
	}
	if err := w.exec("BEGIN IMMEDIATE"); err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	for i := len(r.linked); i < len(r.links); i++ {
		if len(evs) > 0 && s.urgentWaiting.Load() > 0 {
			break
		}
		if opErr = r.ctx.Err(); opErr != nil {
			break
		}
		var e []store.Event
		if len(r.links[i]) > 0 {
			var err error
			if e, opErr, err = w.applyBatch(r.links[i]); err != nil {
				return fail(err)
			}
			if opErr != nil {
				break
			}
		}
		evs = append(evs, e)
		if s.afterLink != nil {
			s.afterLink(len(r.linked) + len(evs))
		}
	}
	if err := w.exec("COMMIT"); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return evs, opErr, nil
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/store"
)

// commitAttempts bounds how often a commit is planned again after
// another writer changed what it read.
const commitAttempts = 16

// errReplan: the transaction's compares failed (the snapshot is stale);
// errReplanGuarded: the same for a guarded commit.
var (
	errReplan        = errors.New("etcd store: the tree changed during the commit")
	errReplanGuarded = fmt.Errorf("%w (a commit came between)", errReplan)
	errChain         = errors.New("etcd store: the commit is a chain: it holds the guard")
	// errLocal: a commit planned from a local snapshot (Options.LocalPlans)
	// would end on that snapshot alone (an op that fails, nothing to write,
	// the guard held), which only a fresh snapshot may decide.
	errLocal = errors.New("etcd store: the local snapshot cannot decide the commit")
)

// Commit applies ops atomically (see the package doc for how a commit
// bigger than one etcd transaction is sent).
func (s *Store) Commit(ctx context.Context, ops ...store.Op) error {
	_, err := s.CommitAt(ctx, ops...)
	return err
}

// CommitAt is Commit with the revision of its last transaction
// (store.Revisioned); a commit that wrote nothing gives the revision of
// the snapshot it held at.
func (s *Store) CommitAt(ctx context.Context, ops ...store.Op) (int64, error) {
	rev, _, err := s.commit(ctx, ops)
	return rev, err
}

// CommitReport is Commit, returning the events it produced
// (store.Reporter): each node it wrote (ancestors it made included) or
// deleted, once, in the order of its first write, with its final state
// as a watcher gets it (value, version, and the commit's revision as
// CommitAt gives it); a deleted node's descendants, removed by a range
// delete, are not listed. A cache in front of the store takes the
// version a blind Put wrote from them instead of reading the node back
// (a linearizable read, a raft round trip, per commit).
func (s *Store) CommitReport(ctx context.Context, ops ...store.Op) ([]store.Event, error) {
	rev, p, err := s.commit(ctx, ops)
	if err != nil || p == nil {
		return nil, err
	}
	return p.events(rev), nil
}

// commit is CommitAt, with the plan that was committed (nil when there
// was nothing to commit).
func (s *Store) commit(ctx context.Context, ops []store.Op) (int64, *plan, error) {
	if err := s.validOps(ops); err != nil {
		return 0, nil, err
	}
	if len(ops) == 0 {
		rev, err := s.Revision(ctx)
		return rev, nil, err
	}
	defer s.observeCommit(time.Now())
	var lease clientv3.LeaseID // held while the commit holds the guard
	defer func() {
		if lease != 0 {
			s.unlock(ctx, lease)
		}
	}()
	guarded := 0 // attempts lost as guarded commits
	fresh := !s.localPlans
	for attempts := 0; attempts < commitAttempts; {
		rev, p, err := s.commitOnce(ctx, ops, lease, fresh || lease != 0)
		var busy errBusy
		if !errors.As(err, &busy) && !errors.Is(err, errLocal) {
			attempts++
		}
		if errors.Is(err, errReplan) || errors.Is(err, errLocal) {
			fresh = true // planned again from a linearizable read: progress as without local plans
		}
		switch {
		case errors.Is(err, errLocal):
			s.count(shapeLocalMissed)
		case errors.As(err, &busy): // not an attempt: wait, bounded by ctx (and the holder's lease)
			s.count(shapeWaited)
			if err := s.waitGuard(ctx, busy.rev); err != nil {
				return 0, nil, err
			}
		case errors.Is(err, errChain) && lease == 0:
			if lease, err = s.lock(ctx); err != nil {
				return 0, nil, err
			}
		case errors.Is(err, errReplanGuarded):
			s.count(shapeLost)
			if guarded++; guarded >= lockAfter && lease == 0 {
				if lease, err = s.lock(ctx); err != nil {
					return 0, nil, err
				}
			}
		case errors.Is(err, errReplan):
			s.count(shapeReplan)
		default:
			return rev, p, err
		}
	}
	return 0, nil, fmt.Errorf("etcd store commit: gave up after %d attempts: %w", commitAttempts, store.ErrConflict)
}

func (s *Store) validOps(ops []store.Op) error {
	if s.closed.Load() {
		return fmt.Errorf("etcd store commit: %w", store.ErrClosed)
	}
	for _, op := range ops {
		if op.Kind < store.OpCreate || op.Kind > store.OpCheck {
			return fmt.Errorf("etcd store %s %s: unknown op kind: %w", op.Kind, op.Path, store.ErrBadPath)
		}
		if err := store.ValidatePath(op.Path); err != nil {
			return fmt.Errorf("etcd store %s: %w", op.Kind, err)
		}
		if op.Path == "/" && op.Kind != store.OpCheck {
			return fmt.Errorf("etcd store %s /: the root is not writable: %w", op.Kind, store.ErrBadPath)
		}
	}
	return nil
}

// commitOnce reads a snapshot, plans the ops on it and sends the writes
// guarded by what the plan relied on. With lease, the commit holds the
// guard (lock.go): it is sent as a guarded commit, which nothing else
// can come before. Without fresh, the snapshot is local (read): what it
// alone would decide is errLocal.
func (s *Store) commitOnce(ctx context.Context, ops []store.Op, lease clientv3.LeaseID, fresh bool) (int64, *plan, error) {
	sn, err := s.read(ctx, ops, fresh)
	if err != nil {
		if !fresh && ctx.Err() == nil && !s.closed.Load() {
			return 0, nil, errLocal // read again, linearizably (and what fails then fails)
		}
		return 0, nil, err
	}
	if sn.guardLease != 0 && sn.guardLease != int64(lease) {
		if !fresh {
			return 0, nil, errLocal
		}
		return 0, nil, errBusy{rev: sn.rev}
	}
	p := newPlan(sn)
	for _, op := range ops {
		if err := p.apply(op); err != nil {
			if !fresh {
				return 0, nil, errLocal
			}
			return 0, nil, err
		}
	}
	ws := p.writes(s.k)
	if len(ws) == 0 && !fresh {
		return 0, nil, errLocal
	}
	if len(ws) == 0 {
		// Nothing to write (checks, deletes of missing nodes): the
		// snapshot was one linearizable read, so the commit held then.
		s.count(shapeReadOnly)
		return sn.rev, nil, nil
	}
	if lease == 0 {
		cmps := s.compares(sn, ops)
		if len(cmps)+1 <= s.maxOps && len(ws)+1 <= s.maxOps && size(ws)+cmpSize(cmps) <= s.maxBytes {
			s.count(shapeFlat)
			rev, err := s.send(ctx, cmps, ws)
			return rev, p, err
		}
	}
	if lease == 0 && len(s.chunks(ws)) > 1 {
		return 0, nil, errChain // a chain holds the guard from its first link
	}
	rev, err := s.sendGuarded(ctx, sn.guardMod, s.checks(sn, ops), ws, lease)
	return rev, p, err
}

// checks are the compares of a commit's Check ops (a leader's fence):
// each checked node unchanged since the snapshot. A guarded commit
// carries them besides the guard's compare, as a write that is not a
// commit of the store moves no guard: an election key that its lease's
// expiry deleted.
func (s *Store) checks(sn *snapshot, ops []store.Op) []clientv3.Cmp {
	var out []clientv3.Cmp
	seen := map[string]bool{}
	for _, op := range ops {
		if op.Kind != store.OpCheck || op.Path == "/" || seen[op.Path] {
			continue
		}
		seen[op.Path] = true
		out = append(out, clientv3.Compare(clientv3.ModRevision(s.k.node(op.Path)), "=", sn.nodes[op.Path].mod))
	}
	return out
}

// compares is what the plan relied on: every op's node unchanged since
// the snapshot (its mod_revision, 0 for absent), every ancestor it read
// neither deleted nor created (its create_revision), and below each
// deleted subtree the first level it found empty still empty (a node
// made deeper meanwhile would outlive the delete).
func (s *Store) compares(sn *snapshot, ops []store.Op) []clientv3.Cmp {
	var out []clientv3.Cmp
	seen := map[string]bool{}
	for _, op := range ops {
		if op.Path == "/" || seen[op.Path] {
			continue
		}
		seen[op.Path] = true
		out = append(out, clientv3.Compare(clientv3.ModRevision(s.k.node(op.Path)), "=", sn.nodes[op.Path].mod))
	}
	for path, n := range sn.nodes {
		if !seen[path] {
			out = append(out, clientv3.Compare(clientv3.CreateRevision(s.k.node(path)), "=", n.create))
		}
	}
	for path, d := range sn.empty {
		if len(sn.levels[path]) > 0 || sn.nodes[path].exists {
			out = append(out, clientv3.Compare(clientv3.CreateRevision(s.k.level(path, d)).WithPrefix(), "=", 0))
		}
	}
	return out
}

// cmpSize bounds the bytes compares add to a request: with thousands of
// them in a flat transaction (EmbeddedMaxTxnOps) they count against
// --max-request-bytes beside the writes.
func cmpSize(cmps []clientv3.Cmp) int {
	n := 0
	for i := range cmps {
		c := cmps[i].GetCompare()
		n += len(c.Key) + len(c.RangeEnd) + 24 // the key, a prefix compare's end, the revision
	}
	return n
}

func size(ws []write) int {
	n := 0
	for _, w := range ws {
		n += w.size()
	}
	return n
}

func (w write) op() clientv3.Op {
	switch {
	case w.put:
		return clientv3.OpPut(w.key, w.value)
	case w.end != "":
		return clientv3.OpDelete(w.key, clientv3.WithRange(w.end))
	}
	return clientv3.OpDelete(w.key)
}

// send commits ws in one flat transaction under cmps, with a put of the
// guard key (every commit moves it: see sendGuarded), only while no
// commit holds the guard (lock.go).
func (s *Store) send(ctx context.Context, cmps []clientv3.Cmp, ws []write) (int64, error) {
	cmps = append(cmps, clientv3.Compare(clientv3.LeaseValue(s.k.guard), "=", 0))
	reqs := make([]clientv3.Op, 0, len(ws)+1)
	for _, w := range ws {
		reqs = append(reqs, w.op())
	}
	reqs = append(reqs, clientv3.OpPut(s.k.guard, ""))
	resp, err := s.txn(ctx, cmps, reqs)
	if err != nil {
		return 0, s.fail(ctx, "commit", "", err)
	}
	if !resp.Succeeded {
		return 0, errReplan
	}
	return resp.Header.Revision, nil
}

// sendGuarded commits writes that do not fit one flat transaction with
// their compares. Every commit of the store puts the guard key, so a
// transaction conditional on the guard's mod_revision as the snapshot
// read it applies only if no commit came between: one compare stands for
// all of them. Up to nestedCap writes go in one transaction, as nested
// transactions (etcd allows maxOps-k requests in each of k nested ones),
// atomically. More than that, or more bytes than one request may carry,
// go as a chain of such transactions, each conditional on the guard as
// the one before it left it (as store/zk chains its multis): applied in
// order, and a commit by another writer between two of them stops the
// chain there.
//
// checks (the commit's fence) go with every transaction.
func (s *Store) sendGuarded(ctx context.Context, guard int64, checks []clientv3.Cmp, ws []write, lease clientv3.LeaseID) (int64, error) {
	chunks := s.chunks(ws)
	for i, c := range chunks {
		s.count(shapeGuarded)
		hold := clientv3.OpPut(s.k.guard, "") // releases the guard if held
		if lease != 0 && i < len(chunks)-1 {
			hold = clientv3.OpPut(s.k.guard, "", clientv3.WithLease(lease))
		}
		resp, err := s.txn(ctx, append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.k.guard), "=", guard)}, checks...),
			append(s.nest(c), hold))
		if err != nil {
			if i == 0 {
				return 0, s.fail(ctx, "commit", "", err)
			}
			return 0, fmt.Errorf("etcd store commit: transaction %d of %d: %w", i+1, len(chunks), s.fail(ctx, "commit", "", err))
		}
		if !resp.Succeeded {
			if i == 0 {
				return 0, errReplanGuarded
			}
			return 0, fmt.Errorf("etcd store commit: %d of %d chained transactions applied, then another commit came between (or its fence fell): %w",
				i, len(chunks), store.ErrConflict)
		}
		guard = resp.Header.Revision
		if s.afterChunk != nil {
			s.afterChunk(i)
		}
	}
	return guard, nil
}

// nestedLayout is how many nested transactions hold n writes beside the
// guard's put (0: flat), or -1 if one transaction cannot.
func (s *Store) nestedLayout(n int) int {
	if n+1 <= s.maxOps {
		return 0
	}
	for m := 1; m+1 < s.maxOps; m++ {
		if m*(s.maxOps-m-1) >= n {
			return m
		}
		if m > s.maxOps/2 {
			break
		}
	}
	return -1
}

// chunks cuts ws into transactions that fit nestedLayout and maxBytes.
func (s *Store) chunks(ws []write) [][]write {
	var out [][]write
	start, bytes := 0, 0
	for i, w := range ws {
		if i > start && (s.nestedLayout(i+1-start) < 0 || bytes+w.size() > s.maxBytes) {
			out = append(out, ws[start:i])
			start, bytes = i, 0
		}
		bytes += w.size()
	}
	return append(out, ws[start:])
}

// nest is the requests of one transaction of ws (the guard's put goes
// after them).
func (s *Store) nest(ws []write) []clientv3.Op {
	m := s.nestedLayout(len(ws))
	if m <= 0 {
		reqs := make([]clientv3.Op, 0, len(ws)+1)
		for _, w := range ws {
			reqs = append(reqs, w.op())
		}
		return reqs
	}
	per := (len(ws) + m - 1) / m
	reqs := make([]clientv3.Op, 0, m+1)
	for from := 0; from < len(ws); from += per {
		part := ws[from:min(len(ws), from+per)]
		inner := make([]clientv3.Op, len(part))
		for i, w := range part {
			inner[i] = w.op()
		}
		reqs = append(reqs, clientv3.OpTxn(nil, inner, nil))
	}
	return reqs
}

// dropRetries and dropBackoff bound how long a transaction is sent again
// while the member drops proposals: a raft leadership transfer (the
// leading scheduler's HandOff, every term) lasts at most an election
// timeout.
const (
	dropRetries = 40
	dropBackoff = 50 * time.Millisecond
)

// txn sends one transaction, again while the member answers that it
// dropped the proposal: raft refused it before it entered the log (a
// leadership transfer under way, or no raft leader yet), so it did not
// apply and sending it again cannot apply it twice. Without this, a
// commit racing the HandOff at the start of every term failed, and a
// batch of status updates waited for the engine's resend (10 s on Mesos),
// their jobs held as running meanwhile.
func (s *Store) txn(ctx context.Context, cmps []clientv3.Cmp, ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	for i := 0; ; i++ {
		resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if !proposalDropped(err) || i >= dropRetries || s.closed.Load() {
			return resp, err
		}
		t := time.NewTimer(dropBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return resp, err
		case <-t.C:
		}
	}
}

// proposalDropped: the member refused the proposal before raft took it
// (etcd's ErrProposalDropped, which reaches the client as an unknown
// gRPC error with that text).
func proposalDropped(err error) bool {
	return err != nil && strings.Contains(err.Error(), "raft proposal dropped")
}

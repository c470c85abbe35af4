package election

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/store"
)

// Errors that end a term (its context's cause) or refuse a leader's act.
var (
	ErrSuspended  = errors.New("election: ZooKeeper connection suspended")
	ErrExpired    = errors.New("election: ZooKeeper session expired")
	ErrNodeLost   = errors.New("election: election node gone")
	ErrLeaseLapse = errors.New("election: leadership not confirmed in time")
	ErrNotLeader  = errors.New("election: not the leader")
	ErrStopped    = errors.New("election: stopped")
)

// Member describes one candidate (the data of its election node).
type Member struct {
	ID       string    `json:"id"`
	URL      string    `json:"url"` // base URL of its API, reachable by the other instances
	Hostname string    `json:"hostname"`
	Started  time.Time `json:"started"`
	Version  string    `json:"version,omitempty"`
	Node     string    `json:"node,omitempty"` // election node name
	Seq      int64     `json:"seq,omitempty"`
}

// Term is one continuous leadership.
type Term struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	node   string // store path of the election node ("" for Solo)
	// version is the store version the election node must have for a
	// write of the term to commit (store.AnyVersion: any; NewFencedTerm).
	version int64
	seq     int64
	began   time.Time
	clk     clock.Clock
	lease   time.Duration // 0: no lease (Solo)
	lastOK  atomic.Int64  // UnixNano (on clk) of the send time of the last confirmed check
	// still is StillLeads's linearizable check of the leadership (nil:
	// the lease alone answers).
	still func(context.Context) error
	// keep: a lapsed lease refuses acts but ends the term only once
	// unconfirmed for hold (NewFencedTerm); hold is lease otherwise.
	keep bool
	hold time.Duration
	// proven is the send time (UnixNano on clk) of the last StillLeads
	// read that found the leadership in force (Proven).
	proven atomic.Int64
}

func newTerm(parent context.Context, node string, seq int64, clk clock.Clock, lease time.Duration, confirmed time.Time) *Term {
	return startTerm(parent, node, seq, clk, lease, lease, confirmed, false)
}

func startTerm(parent context.Context, node string, seq int64, clk clock.Clock, lease, hold time.Duration, confirmed time.Time, keep bool) *Term {
	ctx, cancel := context.WithCancelCause(parent)
	t := &Term{ctx: ctx, cancel: cancel, node: node, version: store.AnyVersion, seq: seq, began: clk.Now(), clk: clk, lease: lease, keep: keep, hold: max(hold, lease)}
	t.lastOK.Store(confirmed.UnixNano())
	if lease > 0 {
		go t.watchLease()
	}
	return t
}

// watchLease ends the term the moment its lease lapses unconfirmed, whether
// or not anything asks Valid: a leader cut off from ZooKeeper stops its
// loops a third of the session timeout after its last confirmed check,
// well before its session can expire and another candidate win, even when
// its client is slow to notice that the connection is gone (a loaded
// machine; the client's own timeout is two thirds of the session).
func (t *Term) watchLease() {
	timer := t.clk.NewTimer(t.untilLapse())
	defer timer.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-timer.C():
			if t.Valid() != nil && t.ctx.Err() != nil { // a lapsed lease (a fenced term's hold) ends the term
				return
			}
			timer.Reset(t.untilLapse())
		}
	}
}

// untilLapse is how long until the term ends unconfirmed (its lease; a
// fenced term's hold).
func (t *Term) untilLapse() time.Duration {
	return time.Unix(0, t.lastOK.Load()).Add(t.hold).Sub(t.clk.Now())
}

// Context is done when the term ends; context.Cause says why.
func (t *Term) Context() context.Context { return t.ctx }

// Node is the store path of the term's election node ("" for Solo).
func (t *Term) Node() string { return t.node }

// Seq is the election node's sequence number (a fencing token that grows
// with every term).
func (t *Term) Seq() int64 { return t.seq }

// Fenced reports whether the store fences the term's writes by itself and
// a lapsed lease only holds its acts back (NewFencedTerm).
func (t *Term) Fenced() bool { return t.keep }

// Began is when the term started.
func (t *Term) Began() time.Time { return t.began }

// Fence returns the ops prepended to every registry write of this term: a
// Check of the election node, so the write commits only while the node
// exists (and, for a term of NewFencedTerm, has the version the term
// began with: a later term of the same node moves it on). Solo terms have
// no fence.
func (t *Term) Fence() []store.Op {
	if t.node == "" {
		return nil
	}
	return []store.Op{store.Check(t.node, t.version)}
}

// Valid reports whether the leader may act now: the term has not ended and
// its lease has not lapsed. A lapsed lease also ends the term, except a
// fenced term's (NewFencedTerm), which acts again after its next
// confirmation.
func (t *Term) Valid() error {
	if err := t.ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLeader, context.Cause(t.ctx))
	}
	if t.lease <= 0 {
		return nil
	}
	since := t.clk.Now().Sub(time.Unix(0, t.lastOK.Load()))
	if since >= t.lease {
		err := fmt.Errorf("%w: last confirmed %s ago (lease %s)", ErrLeaseLapse, since.Round(time.Millisecond), t.lease)
		if since >= t.hold {
			t.End(err)
		}
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return nil
}

// confirm records a check of the node sent at sent that found it in place.
// Checks may be answered out of order (renewals overlap): the latest send
// time wins.
func (t *Term) confirm(sent time.Time) { storeMax(&t.lastOK, sent.UnixNano()) }

// storeMax raises v to n if n is higher, atomically.
func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// StillLeads reports whether the leader may act now, as Valid does, and
// where the election offers one, after a linearizable read that finds
// the term's leadership in force (on etcd: the term's election key,
// still held by its lease). Call it before side effects the store cannot
// fence (calls to Mesos). An answer that the leadership is gone ends the
// term; a failed read (the cluster did not answer) does not, but is
// returned: do not act on it.
func (t *Term) StillLeads(ctx context.Context) error {
	if err := t.Valid(); err != nil {
		return err
	}
	if t.still == nil {
		return nil
	}
	if err := t.still(ctx); err != nil {
		if errors.Is(err, ErrNotLeader) {
			t.End(err)
		}
		return err
	}
	return t.Valid() // the lease may have lapsed during the read
}

// Proven is StillLeads with its read shared: a read sent less than
// within ago that found the leadership in force answers for it (after
// Valid), so that a burst of engine calls pays one read. within must be
// shorter than the store's election timeout: a leader paused longer than
// that, whose successor may have been elected meanwhile, reads again
// before it acts (and its lapsed lease refuses it before the read). The
// elections without a linearizable check (ZooKeeper, Solo) answer with
// Valid alone.
func (t *Term) Proven(ctx context.Context, within time.Duration) error {
	if t.still == nil {
		return t.Valid()
	}
	if last := t.proven.Load(); last != 0 && t.clk.Now().Sub(time.Unix(0, last)) < within {
		return t.Valid()
	}
	sent := t.clk.Now()
	if err := t.StillLeads(ctx); err != nil {
		return err
	}
	storeMax(&t.proven, sent.UnixNano())
	return nil
}

// Confirm records that the leadership was confirmed by a check sent at
// sent (the lease then lasts until sent plus the term's lease). For
// elections outside this package (NewLeasedTerm).
func (t *Term) Confirm(sent time.Time) { t.confirm(sent) }

// End ends the term (idempotent; the first cause wins).
func (t *Term) End(cause error) { t.cancel(cause) }

// Solo is the leadership of a single instance (the embedded mode): one
// term that lasts until its context ends.
type Solo struct {
	self  Member
	clk   clock.Clock
	term  atomic.Pointer[Term]
	terms chan *Term
}

// NewSolo makes a leader of one.
func NewSolo(self Member, clk clock.Clock) *Solo {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Solo{self: self, clk: clk, terms: make(chan *Term, 1)}
}

// Run hands out the one term and returns when ctx ends.
func (s *Solo) Run(ctx context.Context) error {
	t := newTerm(ctx, "", 0, s.clk, 0, s.clk.Now())
	s.term.Store(t)
	s.terms <- t
	<-ctx.Done()
	t.End(ErrStopped)
	return nil
}

// Terms delivers the term once Run started.
func (s *Solo) Terms() <-chan *Term { return s.terms }

// Leader is this instance.
func (s *Solo) Leader() (Member, bool) { return s.self, true }

// Members is this instance alone.
func (s *Solo) Members(context.Context) ([]Member, error) { return []Member{s.self}, nil }

// Self describes this instance.
func (s *Solo) Self() Member { return s.self }

// Current returns the term while it lasts.
func (s *Solo) Current() *Term {
	if t := s.term.Load(); t != nil && t.ctx.Err() == nil {
		return t
	}
	return nil
}

// NewLeasedTerm makes a term for an election outside this package (the
// one on etcd): fenced by the store node at node, numbered seq, valid for
// lease after the send time of each confirmed check (confirmed is the
// first; Confirm records the later ones), ended when the lease lapses.
// still, when not nil, is StillLeads's linearizable check: it returns an
// error wrapping ErrNotLeader when the leadership is gone.
func NewLeasedTerm(parent context.Context, node string, seq int64, clk clock.Clock, lease time.Duration,
	confirmed time.Time, still func(context.Context) error) *Term {
	if clk == nil {
		clk = clock.Real{}
	}
	t := newTerm(parent, node, seq, clk, lease, confirmed)
	t.still = still // read only by StillLeads, which the caller calls later
	return t
}

// NewFencedTerm is NewLeasedTerm for an election whose store fences every
// write of the term by itself (etcd: each transaction compares the term's
// key, which exists exactly while the term leads): a lapsed lease refuses
// acts (Valid, StillLeads, Proven: the calls to the cluster engine) until
// a later confirmation, and ends the term only once unconfirmed for hold
// (the store's own lease, after which it may have let another lead), or
// when the election finds the leadership gone. A leader whose
// confirmations are merely slow (its store applying a backlog on a loaded
// machine) thus keeps its term and its state instead of starting another.
//
// version is the store version node has for this term (store.AnyVersion:
// any): an election that leads again under the same node after a term
// ended writes the node anew (a new version, and a new, higher seq), so
// the fence of the term before refuses its writes from then on.
func NewFencedTerm(parent context.Context, node string, version, seq int64, clk clock.Clock, lease, hold time.Duration,
	confirmed time.Time, still func(context.Context) error) *Term {
	if clk == nil {
		clk = clock.Real{}
	}
	t := startTerm(parent, node, seq, clk, lease, hold, confirmed, true)
	t.version = version
	t.still = still
	return t
}

// NewTerm makes a term without a lease, fenced by the store node at node
// ("" for none), for a leadership other than these (and for tests of what
// runs inside terms).
func NewTerm(parent context.Context, node string, seq int64, clk clock.Clock) *Term {
	if clk == nil {
		clk = clock.Real{}
	}
	return newTerm(parent, node, seq, clk, 0, clk.Now())
}

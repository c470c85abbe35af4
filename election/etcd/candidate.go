package etcd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/store"
	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
)

// Errors that end an etcd term (its context's cause).
var (
	// ErrLeaseGone: the candidate's lease expired or was revoked.
	ErrLeaseGone = errors.New("etcd election: lease gone")
	// ErrKeyGone: the candidate's election key is gone.
	ErrKeyGone = errors.New("etcd election: election key gone")
	// ErrTermOver: the election key was written by a later term of its
	// own candidate (the term asking is over).
	ErrTermOver = errors.New("etcd election: a later term of the key began")
)

// DefaultElectionTTL is the candidates' lease TTL when
// ElectionConfig.TTL is 0.
const DefaultElectionTTL = time.Second

// ElectionConfig configures a Candidate.
type ElectionConfig struct {
	Store *etcdstore.Store
	Dir   string // store path of the election, e.g. /ha/election
	Self  election.Member
	// TTL of the candidate's lease (DefaultElectionTTL when 0). etcd
	// counts whole seconds (it is rounded up) and raises a TTL below its
	// minimum (1.5 raft election timeouts, rounded up to a second: 1 s
	// with a 500 ms election timeout, 2 s with etcd's default 1 s).
	TTL   time.Duration
	Clock clock.Clock
	Log   *slog.Logger
}

// Candidate takes part in an election on the store's etcd cluster until
// Run returns. It is an election.Candidate's etcd counterpart: the same
// Terms, Current, Leader, Members and Self.
type Candidate struct {
	cfg   ElectionConfig
	s     *etcdstore.Store
	kick  chan struct{}
	terms chan *election.Term
	hold  atomic.Bool  // tests: send no keepalive (a paused leader)
	slow  atomic.Int64 // tests: a renewal's answer arrives this many ns late (a cluster applying a backlog)

	mu       sync.Mutex
	sess     *session // nil while we have no key
	leader   election.Member
	hasLead  bool
	term     *election.Term
	termSess *session // the session term belongs to
	sent     *election.Term
	current  atomic.Pointer[election.Term]
}

// session is one lease and the election key it holds.
type session struct {
	lease clientv3.LeaseID
	ttl   time.Duration // as granted
	local time.Duration // the term's lease: half the TTL
	path  string        // store path of the key
	key   string
	data  []byte       // the key's value (the member, as JSON)
	rev   int64        // the key's create_revision
	ka    atomic.Int64 // UnixNano (on the clock) of the send time of the last confirmed keepalive
	// The key as its latest term found it (read and written by Run's
	// goroutine only): its store version and the revision that wrote it
	// (that term's number); led once a term of the key began.
	ver, mod int64
	led      bool
}

// NewCandidate makes a candidate; call Run.
func NewCandidate(cfg ElectionConfig) *Candidate {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultElectionTTL
	}
	cfg.Dir = strings.TrimSuffix(cfg.Dir, "/")
	return &Candidate{cfg: cfg, s: cfg.Store, kick: make(chan struct{}, 1), terms: make(chan *election.Term, 1)}
}

// Terms delivers each term when it begins. A term that ended before it
// was received is still delivered; its context is done.
func (c *Candidate) Terms() <-chan *election.Term { return c.terms }

// Current returns the term in force, or nil.
func (c *Candidate) Current() *election.Term {
	if t := c.current.Load(); t != nil && t.Context().Err() == nil {
		return t
	}
	return nil
}

// Self describes this candidate.
func (c *Candidate) Self() election.Member { return c.cfg.Self }

// Leader returns the leader as last seen (false while none is known).
func (c *Candidate) Leader() (election.Member, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader, c.hasLead
}

// Members lists every candidate, the leader first.
func (c *Candidate) Members(ctx context.Context) ([]election.Member, error) {
	kvs, _, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]election.Member, 0, len(kvs))
	for _, kv := range kvs {
		if m, err := c.member(kv); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// Run takes part until ctx ends, then withdraws (revokes its lease, which
// deletes its key: another candidate leads at once).
func (c *Candidate) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { c.keepAlive(ctx) })
	for ctx.Err() == nil {
		rev, err := c.step(ctx)
		if err != nil && ctx.Err() == nil {
			c.cfg.Log.Warn("election step failed", "err", err)
		}
		c.await(ctx, rev)
	}
	c.endTerm(election.ErrStopped)
	wg.Wait()
	c.mu.Lock()
	sess := c.sess
	c.sess = nil
	c.mu.Unlock()
	if sess != nil {
		c.revoke(sess)
	}
	return nil
}

func (c *Candidate) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// endTerm ends the term in force (of any session when sess is nil).
func (c *Candidate) endTerm(cause error) { c.endTermOf(nil, cause) }

func (c *Candidate) endTermOf(sess *session, cause error) {
	c.mu.Lock()
	t := c.term
	if t == nil || (sess != nil && c.termSess != sess) {
		c.mu.Unlock()
		return
	}
	c.term, c.termSess = nil, nil
	c.mu.Unlock()
	t.End(cause)
	if t.Context().Err() != nil {
		c.cfg.Log.Warn("leadership ended", "node", t.Node(), "term", t.Seq(), "cause", context.Cause(t.Context()))
	}
}

// dropSession forgets sess (its lease or key is gone), ending its term,
// and revokes its lease should it still exist.
func (c *Candidate) dropSession(sess *session, cause error) {
	c.endTermOf(sess, cause)
	c.mu.Lock()
	mine := c.sess == sess
	if mine {
		c.sess = nil
	}
	c.mu.Unlock()
	if mine {
		c.revoke(sess)
		c.poke()
	}
}

func (c *Candidate) revoke(sess *session) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = c.s.Client().Revoke(ctx, sess.lease)
}

// prefix is the etcd key range of the election's keys.
func (c *Candidate) prefix() string { return c.s.ChildrenKey(c.cfg.Dir) }

// list reads the candidates' keys (linearizable), lowest create_revision
// first, and the revision read at.
func (c *Candidate) list(ctx context.Context) ([]*mvccpb.KeyValue, int64, error) {
	resp, err := c.s.Read(ctx, c.prefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("etcd election: list %s: %w: %w", c.cfg.Dir, store.ErrUnavailable, err)
	}
	kvs := slices.Clone(resp.Kvs)
	slices.SortFunc(kvs, func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.CreateRevision, b.CreateRevision) })
	return kvs, resp.Header.Revision, nil
}

func (c *Candidate) member(kv *mvccpb.KeyValue) (election.Member, error) {
	_, val, err := etcdstore.DecodeValue(kv.Value)
	if err != nil {
		return election.Member{}, err
	}
	var m election.Member
	if err := json.Unmarshal(val, &m); err != nil {
		return election.Member{}, fmt.Errorf("etcd election: decode %s: %w", kv.Key, err)
	}
	// the revision of the key's last write: a leader's is its term's
	// number (each term writes its key as it begins), a waiting
	// candidate's its creation (the members are listed in that order)
	m.Node, m.Seq = string(kv.Key[len(c.prefix()):]), kv.ModRevision
	return m, nil
}

// step makes sure we hold a key, reads the candidates and leads (the
// lowest create_revision) or follows. It returns the revision read.
func (c *Candidate) step(ctx context.Context) (int64, error) {
	sess, err := c.ensureSession(ctx)
	if err != nil {
		return 0, err
	}
	kvs, rev, err := c.list(ctx)
	if err != nil {
		return 0, err
	}
	idx := slices.IndexFunc(kvs, func(kv *mvccpb.KeyValue) bool {
		return string(kv.Key) == sess.key && kv.Lease == int64(sess.lease)
	})
	if idx < 0 {
		c.dropSession(sess, fmt.Errorf("%w: %w", election.ErrNodeLost, ErrKeyGone))
		return 0, errors.New("etcd election: our key is gone; joining again")
	}
	if m, err := c.member(kvs[0]); err == nil {
		c.mu.Lock()
		c.leader, c.hasLead = m, true
		c.mu.Unlock()
	}
	if idx > 0 {
		c.endTerm(election.ErrNotLeader)
		return rev, nil
	}
	return rev, c.lead(ctx, sess)
}

// lead starts a term of sess if none is in force: our key is the lowest.
// The term's lease runs from the send time of the last confirmed
// keepalive (or the grant).
func (c *Candidate) lead(ctx context.Context, sess *session) error {
	c.mu.Lock()
	t := c.term
	if t != nil && (t.Context().Err() != nil || c.termSess != sess) { // ended (its lease lapsed, a loop failed)
		t = nil
	}
	c.mu.Unlock()
	if t == nil && c.cfg.Clock.Now().Sub(time.Unix(0, sess.ka.Load())) >= sess.local {
		// A term begun now would be lapsed at birth (and end at once, its
		// key written again for nothing): the next confirmed keepalive
		// pokes the candidate (renew).
		c.cfg.Log.Debug("etcd election: lowest key, but its lease is unconfirmed; waiting for a keepalive", "node", sess.path)
		return nil
	}
	if t == nil {
		// Every term writes its key as it begins, and that write's
		// revision is its number: higher than the number of every term
		// before it, of any key (the term before ended before this key
		// became the lowest). A key that led a term that ended while the
		// key lived fences that term out so (its loops may still be
		// stopping). The key's create_revision would not do: a standby's
		// key created before another key's second term began would number
		// its own first term lower than that one: terms would go back.
		if err := c.retake(ctx, sess); err != nil {
			return err
		}
		sess.led = true
		// Fenced: every write of the term compares its key (at the version
		// the term wrote), so a lease that lapsed locally (slow keepalives)
		// only holds back the engine calls until the next confirmed one; a
		// whole TTL unconfirmed, or the loss of the lease or key, ends it.
		t = election.NewFencedTerm(ctx, sess.path, sess.ver, sess.mod, c.cfg.Clock, sess.local, sess.ttl,
			time.Unix(0, sess.ka.Load()), c.stillLeads(sess, sess.mod))
		c.mu.Lock()
		c.term, c.termSess = t, sess
		c.current.Store(t)
		c.mu.Unlock()
	}
	if err := t.Valid(); err != nil {
		// Delivered or not, a confirmed keepalive comes next (it pokes the
		// candidate to deliver this one), or the lease's loss.
		c.cfg.Log.Debug("etcd election: the term's lease lapsed; waiting for a keepalive", "term", t.Seq(), "err", err)
		return nil
	}
	c.deliver(t, sess)
	return nil
}

// deliver hands term t to the candidate's terms once (an undelivered older
// one is dropped).
func (c *Candidate) deliver(t *election.Term, sess *session) {
	c.mu.Lock()
	fresh := t != c.sent
	if fresh {
		c.sent = t
	}
	c.mu.Unlock()
	if fresh {
		c.cfg.Log.Info("elected leader", "node", sess.path, "term", t.Seq())
		select {
		case <-c.terms: // an undelivered older term: drop it
		default:
		}
		c.terms <- t
	}
}

// stillLeads is the check of the term numbered mod: its key is still
// there, held by its lease, as that term wrote it (no key with a lower
// create_revision can appear later, so the key's existence is the
// leadership's; a later term of the same key writes it again).
func (c *Candidate) stillLeads(sess *session, mod int64) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := c.s.Client().Get(ctx, sess.key)
		if err != nil {
			return fmt.Errorf("etcd election: confirm leadership: %w: %w", store.ErrUnavailable, err)
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].Lease != int64(sess.lease) || resp.Kvs[0].CreateRevision != sess.rev {
			return fmt.Errorf("%w: %w", election.ErrNotLeader, ErrKeyGone)
		}
		if resp.Kvs[0].ModRevision != mod {
			return fmt.Errorf("%w: %w", election.ErrNotLeader, ErrTermOver)
		}
		return nil
	}
}

// retake writes sess's key again (same value and lease, the next store
// version) for a new term of it: the revision of that write is the new
// term's number, higher than any term's before it, and the new version
// makes the fence of a term of the key before fail. A key that is gone
// ends the session (the candidate joins again under a new one).
func (c *Candidate) retake(ctx context.Context, sess *session) error {
	resp, err := c.s.Client().Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(sess.key), "=", sess.rev),
		clientv3.Compare(clientv3.ModRevision(sess.key), "=", sess.mod)).
		Then(clientv3.OpPut(sess.key, etcdstore.EncodeValue(sess.ver+1, sess.data), clientv3.WithLease(sess.lease))).Commit()
	if err != nil {
		return fmt.Errorf("etcd election: lead again under %s: %w: %w", sess.path, store.ErrUnavailable, err)
	}
	if !resp.Succeeded {
		c.dropSession(sess, fmt.Errorf("%w: %w", election.ErrNodeLost, ErrKeyGone))
		return fmt.Errorf("etcd election: lead again under %s: the key is gone or was written by another; joining again", sess.path)
	}
	sess.ver, sess.mod = sess.ver+1, resp.Header.Revision
	if sess.led {
		c.cfg.Log.Info("leading again under the same key: a new term", "node", sess.path, "term", sess.mod)
	}
	return nil
}

// ensureSession grants a lease and creates our key under it when we have
// none.
func (c *Candidate) ensureSession(ctx context.Context) (*session, error) {
	c.mu.Lock()
	sess := c.sess
	c.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	if err := c.ensureDir(ctx); err != nil {
		return nil, err
	}
	data, err := json.Marshal(c.cfg.Self)
	if err != nil {
		return nil, err
	}
	sent := c.cfg.Clock.Now()
	g, err := c.s.Client().Grant(ctx, int64((c.cfg.TTL+time.Second-1)/time.Second))
	if err != nil {
		return nil, fmt.Errorf("etcd election: grant a lease: %w: %w", store.ErrUnavailable, err)
	}
	sess = &session{lease: g.ID, ttl: time.Duration(g.TTL) * time.Second, data: data, ver: 1}
	sess.local = sess.ttl / 2
	sess.path = fmt.Sprintf("%s/n_%016x", c.cfg.Dir, int64(g.ID))
	sess.key = c.s.NodeKey(sess.path)
	sess.ka.Store(sent.UnixNano())
	resp, err := c.s.Client().Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(sess.key), "=", 0)).
		Then(clientv3.OpPut(sess.key, etcdstore.EncodeValue(1, data), clientv3.WithLease(g.ID))).Commit()
	if err != nil || !resp.Succeeded {
		c.revoke(sess)
		if err == nil {
			err = errors.New("the key exists")
		}
		return nil, fmt.Errorf("etcd election: create %s: %w", sess.path, err)
	}
	sess.rev = resp.Header.Revision
	sess.mod = sess.rev
	c.mu.Lock()
	c.sess = sess
	c.mu.Unlock()
	c.cfg.Log.Info("joined the election", "node", sess.path, "ttl", sess.ttl)
	return sess, nil
}

// ensureDir creates the election's directory and its ancestors (store
// nodes), so that listings of the store see the keys under a node.
func (c *Candidate) ensureDir(ctx context.Context) error {
	for i := 1; i <= len(c.cfg.Dir); i++ {
		if i < len(c.cfg.Dir) && c.cfg.Dir[i] != '/' {
			continue
		}
		p := c.cfg.Dir[:i]
		if _, err := c.s.Get(ctx, p); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := c.s.Commit(ctx, store.Create(p, nil)); err != nil && !errors.Is(err, store.ErrExists) {
			return fmt.Errorf("etcd election: create %s: %w", p, err)
		}
	}
	return nil
}

// await blocks until a candidate's key changes (a watch from the
// revision after rev), a keepalive finds the lease gone, the next check
// is due (a TTL) or ctx ends.
func (c *Candidate) await(ctx context.Context, rev int64) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var events clientv3.WatchChan
	if rev > 0 {
		events = c.s.Client().Watch(clientv3.WithRequireLeader(wctx), c.prefix(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	}
	pause := c.cfg.TTL
	if rev == 0 {
		pause = min(pause, 200*time.Millisecond)
	}
	timer := c.cfg.Clock.NewTimer(pause)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-c.kick:
	case <-events:
	case <-timer.C():
	}
}

// keepAlive renews the lease every sixth of its TTL and confirms the
// term's lease with each renewal; a renewal that finds the lease gone
// ends the term and the session at once.
//
// Renewals go to the raft leader's member (the store's KeepAliveOnce):
// one a follower forwards is answered only once the raft leader has
// applied its backlog (a loaded cluster: 0.3-1.7 s), past the TTL at
// times, and the lease expired on the server. Renewals overlap: one is
// sent every sixth of the TTL whether or not the one before has been
// answered, and each may take up to the whole TTL, so one late answer
// does not end a term whose lease etcd was still renewing. An answer
// confirms the term from its own send time, which is safe however late
// it comes: etcd's lease lasts at least a TTL from when it received
// that renewal.
func (c *Candidate) keepAlive(ctx context.Context) {
	var inflight sync.WaitGroup
	defer inflight.Wait()
	for {
		c.mu.Lock()
		sess := c.sess
		c.mu.Unlock()
		every := 100 * time.Millisecond
		if sess != nil {
			every = sess.ttl / 6
		}
		timer := c.cfg.Clock.NewTimer(every)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		if sess == nil || c.hold.Load() {
			continue
		}
		inflight.Go(func() { c.renew(ctx, sess) })
	}
}

// renew sends one renewal of sess's lease (bounded by its TTL) and
// confirms the term with its send time.
func (c *Candidate) renew(ctx context.Context, sess *session) {
	sent := c.cfg.Clock.Now()
	kctx, cancel := context.WithTimeout(ctx, sess.ttl)
	resp, err := c.s.KeepAliveOnce(kctx, sess.lease) // at the raft leader's member: see the store's KeepAliveOnce
	if d := time.Duration(c.slow.Load()); d > 0 && err == nil {
		timer := c.cfg.Clock.NewTimer(d)
		select {
		case <-kctx.Done():
			err = kctx.Err()
		case <-timer.C():
		}
		timer.Stop()
	}
	cancel()
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && resp.TTL <= 0):
		c.dropSession(sess, fmt.Errorf("%w: %w", election.ErrNotLeader, ErrLeaseGone))
	case err != nil:
		if ctx.Err() == nil {
			c.cfg.Log.Debug("etcd election: keepalive failed", "err", err)
		}
	default:
		for n := sent.UnixNano(); ; {
			if old := sess.ka.Load(); n <= old || sess.ka.CompareAndSwap(old, n) {
				break
			}
		}
		c.mu.Lock()
		t, ts, sentT := c.term, c.termSess, c.sent
		c.mu.Unlock()
		if t != nil && ts == sess {
			t.Confirm(sent)
			if t != sentT || t.Context().Err() != nil {
				c.poke() // a term held back by its lapsed lease: deliver it now; one that ended: the next
			}
		}
	}
}

package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/clock"
)

// Conn is what the election needs of a ZooKeeper connection (*zk.Conn).
type Conn interface {
	CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	Get(path string) ([]byte, *zk.Stat, error)
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Delete(path string, version int32) error
	SessionID() int64
	State() zk.State
}

// Config configures a Candidate.
type Config struct {
	Conn     Conn
	Dir      string // znode of the election, e.g. /elasticjob-cloud/ha/election
	StoreDir string // the same directory as a store path (/ha/election), for fencing
	ACL      []zk.ACL
	Self     Member
	// SessionTimeout is the ZooKeeper session timeout; the lease is a third
	// of it, confirmed every ninth (two confirmations may be late before it lapses).
	SessionTimeout time.Duration
	Clock          clock.Clock
	Log            *slog.Logger
}

// Candidate takes part in the election until Run returns.
type Candidate struct {
	cfg   Config
	lease time.Duration
	every time.Duration
	kick  chan struct{}
	terms chan *Term

	mu      sync.Mutex
	node    string // our node's name, "" when we have none
	session int64  // the session our node belongs to
	leader  Member
	hasLead bool
	term    *Term
	sent    *Term                      // the last term put on the terms channel
	led     string                     // the node whose term was delivered last
	watches map[string]<-chan zk.Event // node name → armed watch (loop-owned)
	current atomic.Pointer[Term]
}

// New makes a candidate. Feed it the connection's session events with
// SessionEvent (e.g. from store/zk Session.OnState), then call Run.
func New(cfg Config) *Candidate {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 15 * time.Second
	}
	if cfg.ACL == nil {
		cfg.ACL = zk.WorldACL(zk.PermAll)
	}
	return &Candidate{cfg: cfg, lease: cfg.SessionTimeout / 3, every: cfg.SessionTimeout / 9,
		kick: make(chan struct{}, 1), terms: make(chan *Term, 1), watches: map[string]<-chan zk.Event{}}
}

// Terms delivers each term when it begins. A term that ended before it was
// received is still delivered; its context is done.
func (c *Candidate) Terms() <-chan *Term { return c.terms }

// Current returns the term in force, or nil.
func (c *Candidate) Current() *Term {
	if t := c.current.Load(); t != nil && t.ctx.Err() == nil {
		return t
	}
	return nil
}

// Self describes this candidate.
func (c *Candidate) Self() Member { return c.cfg.Self }

// Leader returns the leader as last seen (false while none is known).
func (c *Candidate) Leader() (Member, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader, c.hasLead
}

// SessionEvent reports a session state change. It ends the term at once on
// a suspension or an expiry; it never blocks.
func (c *Candidate) SessionEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateDisconnected:
		c.endTerm(ErrSuspended)
	case zk.StateExpired, zk.StateAuthFailed:
		c.endTerm(ErrExpired)
	}
	c.poke()
}

func (c *Candidate) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Candidate) endTerm(cause error) {
	c.mu.Lock()
	t := c.term
	c.term = nil
	c.mu.Unlock()
	if t != nil {
		t.End(cause)
		c.cfg.Log.Warn("leadership ended", "node", t.node, "cause", context.Cause(t.ctx))
	}
}

// Run takes part until ctx ends, then withdraws (deletes its node).
func (c *Candidate) Run(ctx context.Context) error {
	defer c.withdraw()
	for ctx.Err() == nil {
		watched, err := c.step(ctx)
		if err != nil {
			c.cfg.Log.Warn("election step failed", "err", err)
		}
		c.await(ctx, watched, err != nil)
	}
	c.endTerm(ErrStopped)
	return nil
}

func (c *Candidate) withdraw() {
	c.mu.Lock()
	node := c.node
	c.node = ""
	c.mu.Unlock()
	if node != "" && c.cfg.Conn.State() == zk.StateHasSession {
		_ = c.cfg.Conn.Delete(path.Join(c.cfg.Dir, node), -1)
	}
}

// await blocks until a watch fires, the session changes, the next check is
// due or ctx ends. A watch that fired is forgotten (watches are one-shot).
func (c *Candidate) await(ctx context.Context, watched []string, failed bool) {
	chans := make([]<-chan zk.Event, 2)
	for i, n := range watched {
		if i < len(chans) {
			chans[i] = c.watches[n]
		}
	}
	pause := c.every
	if failed {
		pause = min(c.every, time.Second)
	}
	timer := c.cfg.Clock.NewTimer(pause)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-c.kick:
	case <-chans[0]:
		delete(c.watches, watched[0])
	case <-chans[1]:
		delete(c.watches, watched[1])
	case <-timer.C():
	}
}

// watch arms (or keeps) the one-shot watch of node and reports whether the
// node exists.
func (c *Candidate) watch(node string) (bool, error) {
	if _, ok := c.watches[node]; ok {
		return true, nil // armed earlier and not fired: the node still exists
	}
	ok, _, w, err := c.cfg.Conn.ExistsW(path.Join(c.cfg.Dir, node))
	if err != nil {
		return false, fmt.Errorf("election: watch %s: %w", node, err)
	}
	c.watches[node] = w
	return ok, nil
}

// step makes sure our node exists, reads the candidates and acts: lead
// (and confirm the lease) or follow (and watch the node before ours and
// the leader's). It returns the watches to wait on.
func (c *Candidate) step(ctx context.Context) ([]string, error) {
	conn := c.cfg.Conn
	if conn.State() != zk.StateHasSession {
		c.endTerm(ErrSuspended)
		clear(c.watches) // a new session re-arms nothing we can rely on
		return nil, nil  // a session event will kick us
	}
	if err := c.ensureNode(); err != nil {
		return nil, err
	}
	sent := c.cfg.Clock.Now()
	kids, _, err := conn.Children(c.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("election: list %s: %w", c.cfg.Dir, err)
	}
	nodes := sortBySeq(kids)
	c.mu.Lock()
	mine := c.node
	c.mu.Unlock()
	idx := indexOf(nodes, mine)
	if idx < 0 { // our node vanished (expired session, or deleted by hand)
		c.endTerm(ErrNodeLost)
		c.mu.Lock()
		c.node = ""
		c.mu.Unlock()
		return nil, errors.New("election: our node is gone; joining again")
	}
	c.noteLeader(nodes[0])
	if idx == 0 {
		return c.lead(ctx, mine, sent)
	}
	c.endTerm(ErrNotLeader)
	return c.follow(nodes[idx-1], nodes[0])
}

// ensureNode creates our node when we have none in the current session.
func (c *Candidate) ensureNode() error {
	conn := c.cfg.Conn
	c.mu.Lock()
	have := c.node != "" && c.session == conn.SessionID()
	c.mu.Unlock()
	if have {
		return nil
	}
	if err := c.ensureDir(); err != nil {
		return err
	}
	data, err := json.Marshal(c.cfg.Self)
	if err != nil {
		return err
	}
	session := conn.SessionID()
	p, err := conn.CreateProtectedEphemeralSequential(path.Join(c.cfg.Dir, "n_"), data, c.cfg.ACL)
	if err != nil {
		return fmt.Errorf("election: create node in %s: %w", c.cfg.Dir, err)
	}
	c.mu.Lock()
	c.node, c.session = path.Base(p), session
	c.mu.Unlock()
	c.cfg.Log.Info("joined the election", "node", path.Base(p))
	return nil
}

func (c *Candidate) ensureDir() error {
	conn := c.cfg.Conn
	for i := 1; i <= len(c.cfg.Dir); i++ {
		if i < len(c.cfg.Dir) && c.cfg.Dir[i] != '/' {
			continue
		}
		p := c.cfg.Dir[:i]
		ok, _, err := conn.Exists(p)
		if err == nil && !ok {
			_, err = conn.Create(p, nil, 0, c.cfg.ACL)
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("election: create %s: %w", p, err)
		}
	}
	return nil
}

// lead starts a term if none is in force and confirms its lease: the
// listing just made (sent at sent) found our node lowest.
func (c *Candidate) lead(ctx context.Context, mine string, sent time.Time) ([]string, error) {
	c.mu.Lock()
	t := c.term
	if t != nil && t.ctx.Err() != nil { // ended by its lease
		t = nil
	}
	again := t == nil && c.led == mine
	c.mu.Unlock()
	if again {
		// Our node led a term that ended while the node lived (its lease
		// lapsed, a suspension the session outlived, a loop failed).
		// Another term under it would carry the same number and pass the
		// old term's fence: give the node up and join again under a new
		// one, whose sequence is higher than every node's before it (as
		// Curator's LeaderLatch resets on a reconnect).
		return nil, c.rejoin(mine)
	}
	c.mu.Lock()
	if t == nil {
		t = newTerm(ctx, c.cfg.StoreDir+"/"+mine, seqOf(mine), c.cfg.Clock, c.lease, sent)
		c.term = t
		c.current.Store(t)
	}
	fresh := t != c.sent
	c.mu.Unlock()
	t.confirm(sent)
	if err := t.Valid(); err != nil {
		return nil, err // the confirmation came too late: the next step starts a new term
	}
	if fresh {
		c.cfg.Log.Info("elected leader", "node", mine, "seq", t.seq)
		c.mu.Lock()
		c.led = mine
		c.mu.Unlock()
		c.deliver(t)
	}
	if _, err := c.watch(mine); err != nil {
		return nil, err
	}
	return []string{mine}, nil
}

// rejoin deletes our node mine (the next step creates another).
func (c *Candidate) rejoin(mine string) error {
	if err := c.cfg.Conn.Delete(path.Join(c.cfg.Dir, mine), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("election: give up %s to lead again under a new node: %w", mine, err)
	}
	c.mu.Lock()
	if c.node == mine {
		c.node = ""
	}
	c.mu.Unlock()
	delete(c.watches, mine)
	c.cfg.Log.Info("election: our node led a term that ended; joining again under a new node", "node", mine)
	c.poke()
	return nil
}

// follow watches the node before ours and the leader's.
func (c *Candidate) follow(pred, leader string) ([]string, error) {
	watched := []string{pred}
	if leader != pred {
		watched = append(watched, leader)
	}
	for _, n := range watched {
		ok, err := c.watch(n)
		if err != nil {
			return nil, err
		}
		if !ok {
			c.poke() // gone already: look again at once
		}
	}
	return watched, nil
}

// noteLeader reads the leader's description when the leader changed.
func (c *Candidate) noteLeader(node string) {
	c.mu.Lock()
	same := c.hasLead && c.leader.Node == node
	c.mu.Unlock()
	if same {
		return
	}
	m, err := c.member(node)
	if err != nil {
		c.cfg.Log.Warn("election: read the leader's node", "node", node, "err", err)
		return
	}
	c.mu.Lock()
	c.leader, c.hasLead = m, true
	c.mu.Unlock()
}

func (c *Candidate) member(node string) (Member, error) {
	data, _, err := c.cfg.Conn.Get(path.Join(c.cfg.Dir, node))
	if err != nil {
		return Member{}, err
	}
	var m Member
	if err := json.Unmarshal(data, &m); err != nil {
		return Member{}, fmt.Errorf("decode %s: %w", node, err)
	}
	m.Node, m.Seq = node, seqOf(node)
	return m, nil
}

// Members lists every candidate, the leader first.
func (c *Candidate) Members(ctx context.Context) ([]Member, error) {
	kids, _, err := c.cfg.Conn.Children(c.cfg.Dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil // no candidate joined yet
	}
	if err != nil {
		return nil, fmt.Errorf("election: list %s: %w", c.cfg.Dir, err)
	}
	var out []Member
	for _, n := range sortBySeq(kids) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		m, err := c.member(n)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (c *Candidate) deliver(t *Term) {
	c.mu.Lock()
	c.sent = t
	c.mu.Unlock()
	select {
	case <-c.terms: // an undelivered older term: drop it
	default:
	}
	c.terms <- t
}

// seqOf parses the sequence suffix of an election node name.
func seqOf(name string) int64 {
	i := strings.LastIndexByte(name, '_')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// sortBySeq orders election node names by sequence (names without one are
// not candidates and are left out).
func sortBySeq(kids []string) []string {
	out := make([]string, 0, len(kids))
	for _, k := range kids {
		if seqOf(k) >= 0 {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return seqOf(out[i]) < seqOf(out[j]) })
	return out
}

func indexOf(list []string, s string) int {
	if s == "" {
		return -1
	}
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

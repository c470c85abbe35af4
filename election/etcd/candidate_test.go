package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/store"
	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
)

// elected is a term some candidate of an electionCluster received.
type elected struct {
	idx  int
	term *election.Term
	at   time.Time
}

// electionCluster is three members on loopback, a store on each (its
// client calls that member alone, in-process, planning commits from its
// applied state, as a scheduler's store on its embedded member does) and
// a candidate on each store.
type electionCluster struct {
	members []*etcdstore.Member
	stores  []*etcdstore.Store
	cands   []*Candidate
	elected chan elected
	latest  []atomic.Pointer[election.Term]
}

func newElectionCluster(t *testing.T, tweak ...func(*ElectionConfig)) *electionCluster {
	t.Helper()
	ms := startMembers(t, 3)
	prefix := fmt.Sprintf("/e%d", prefixSeq.Add(1))
	ec := &electionCluster{members: ms, elected: make(chan elected, 64), latest: make([]atomic.Pointer[election.Term], len(ms))}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, m := range ms {
		s := openStore(t, nil, etcdstore.Options{Member: m, LocalPlans: true, Prefix: prefix, DialTimeout: 2 * time.Second})
		cfg := ElectionConfig{Store: s, Dir: "/ha/election",
			Self: election.Member{ID: "c" + strconv.Itoa(i), URL: "http://127.0.0.1:" + strconv.Itoa(8000+i)}}
		for _, f := range tweak {
			f(&cfg)
		}
		c := NewCandidate(cfg)
		ec.stores, ec.cands = append(ec.stores, s), append(ec.cands, c)
		wg.Go(func() { _ = c.Run(ctx) })
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case term := <-c.Terms():
					ec.latest[i].Store(term)
					ec.elected <- elected{idx: i, term: term, at: time.Now()}
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ec
}

// next waits (bounded) for the next term delivered under a key other
// than after's (a candidate whose own lease lapsed on a loaded machine
// leads again under the same key, in a new term with a higher number:
// not a change of leader).
func (ec *electionCluster) next(t *testing.T, within time.Duration, after *elected) elected {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e := <-ec.elected:
			if after != nil && e.idx == after.idx && e.term.Node() == after.term.Node() {
				continue
			}
			return e
		case <-deadline:
			t.Fatalf("no candidate elected within %v", within)
		}
	}
}

// ended waits (bounded) for term to end.
func ended(t *testing.T, term *election.Term, within time.Duration) {
	t.Helper()
	select {
	case <-term.Context().Done():
	case <-time.After(within):
		t.Fatalf("term %d still in force after %v", term.Seq(), within)
	}
}

func fencedPut(ctx context.Context, s *etcdstore.Store, term *election.Term, path, value string) error {
	return s.Commit(ctx, append(term.Fence(), store.Put(path, []byte(value)))...)
}

// The leader's member is killed: its term ends (its keepalives fail), a
// candidate on a surviving member leads within a bounded wait with a
// higher term number, the old term's fenced writes are refused and the
// new one's commit.
func TestElectionFailover(t *testing.T) {
	ec := newElectionCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := ec.next(t, 30*time.Second, nil)
	for i, c := range ec.cands {
		if cur := c.Current(); i != first.idx && cur != nil {
			t.Fatalf("candidate %d leads (term %d) beside candidate %d", i, cur.Seq(), first.idx)
		}
	}
	if m, ok := ec.cands[(first.idx+1)%3].Leader(); ok && m.ID != "c"+strconv.Itoa(first.idx) {
		t.Errorf("a follower sees %s as the leader, want c%d", m.ID, first.idx)
	}
	if err := fencedPut(ctx, ec.stores[first.idx], first.term, "/x", "1"); err != nil {
		t.Fatalf("the leader's fenced write: %v", err)
	}
	// StillLeads asks for a confirmation within the lease (500 ms here); on a loaded
	// machine one keepalive can come late and the term is then, rightly, unconfirmed
	// for a moment. The leader's term must be confirmed again within a few keepalives.
	err := first.term.StillLeads(ctx)
	for deadline := time.Now().Add(5 * time.Second); err != nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // bounded poll: the next keepalive
		err = first.term.StillLeads(ctx)
	}
	if err != nil {
		t.Fatalf("StillLeads of the leader: %v", err)
	}
	var members []election.Member
	for deadline := time.Now().Add(10 * time.Second); len(members) < 3 && time.Now().Before(deadline); {
		if members, err = ec.cands[first.idx].Members(ctx); err != nil {
			t.Fatal(err)
		}
		if len(members) < 3 {
			time.Sleep(20 * time.Millisecond) // bounded poll: every candidate joins
		}
	}
	if len(members) != 3 || members[0].ID != "c"+strconv.Itoa(first.idx) || members[0].Seq != first.term.Seq() {
		t.Fatalf("Members = %+v; want 3, the leader first", members)
	}

	termEnd := make(chan time.Time, 1)
	go func() { <-first.term.Context().Done(); termEnd <- time.Now() }()
	killed := time.Now()
	ec.members[first.idx].Kill()
	stopped := time.Since(killed) // Kill returns once the member stopped serving (it serves meanwhile)
	ended(t, first.term, 5*time.Second)
	endedAfter := (<-termEnd).Sub(killed)
	next := ec.next(t, 15*time.Second, &first)
	if next.idx == first.idx {
		t.Fatalf("the killed candidate leads again")
	}
	t.Logf("takeover: Kill took %v; the old term ended %v after the kill began (%v); new leader c%d term %d elected %v after the kill",
		stopped.Round(time.Millisecond), endedAfter.Round(time.Millisecond), context.Cause(first.term.Context()), next.idx, next.term.Seq(),
		next.at.Sub(killed).Round(time.Millisecond))
	if next.term.Seq() <= first.term.Seq() {
		t.Fatalf("term %d after term %d: want a higher number", next.term.Seq(), first.term.Seq())
	}
	if err := fencedPut(ctx, ec.stores[next.idx], first.term, "/x", "old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old term's fenced write: %v, want ErrNotFound", err)
	}
	if err := fencedPut(ctx, ec.stores[next.idx], next.term, "/x", "2"); err != nil {
		t.Fatalf("the new leader's fenced write: %v", err)
	}
	if err := next.term.StillLeads(ctx); err != nil {
		t.Fatalf("StillLeads of the new leader: %v", err)
	}
	if n, err := ec.stores[next.idx].Get(ctx, "/x"); err != nil || string(n.Value) != "2" {
		t.Fatalf("/x = %q, %v", n.Value, err)
	}
}

// A leader paused past its lease (no keepalive) loses its term to its
// own lease, another candidate leads once the lease expired in etcd, and
// the paused leader, resumed, finds its term's fenced writes refused and
// StillLeads false.
func TestElectionPausedLeader(t *testing.T) {
	ec := newElectionCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := ec.next(t, 30*time.Second, nil)
	old := ec.cands[first.idx]
	old.hold.Store(true)
	paused := time.Now()
	ended(t, first.term, 5*time.Second)
	endedAfter := time.Since(paused)
	if !errors.Is(context.Cause(first.term.Context()), election.ErrLeaseLapse) {
		t.Errorf("the paused term ended for %v, want its lease's lapse", context.Cause(first.term.Context()))
	}
	next := ec.next(t, 15*time.Second, &first)
	t.Logf("paused leader: term ended %v after the pause; c%d term %d elected %v after it",
		endedAfter.Round(time.Millisecond), next.idx, next.term.Seq(), next.at.Sub(paused).Round(time.Millisecond))
	if next.idx == first.idx || next.term.Seq() <= first.term.Seq() {
		t.Fatalf("after c%d term %d: c%d term %d", first.idx, first.term.Seq(), next.idx, next.term.Seq())
	}
	old.hold.Store(false) // resumed
	if err := fencedPut(ctx, ec.stores[first.idx], first.term, "/y", "stale"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the resumed leader's fenced write: %v, want ErrNotFound", err)
	}
	if err := first.term.StillLeads(ctx); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("StillLeads of the resumed leader: %v, want ErrNotLeader", err)
	}
	if err := next.term.StillLeads(ctx); err != nil {
		t.Fatalf("StillLeads of the new leader: %v", err)
	}
	if err := fencedPut(ctx, ec.stores[next.idx], next.term, "/y", "new"); err != nil {
		t.Fatalf("the new leader's fenced write: %v", err)
	}
	if cur := old.Current(); cur != nil {
		t.Fatalf("the resumed candidate leads again (term %d)", cur.Seq())
	}
}

// StillLeads is a linearizable read: it finds the leadership gone as
// soon as the key is gone, before the term's own lease lapses.
func TestElectionStillLeads(t *testing.T) {
	ec := newElectionCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := ec.next(t, 30*time.Second, nil)
	if err := first.term.StillLeads(ctx); err != nil {
		t.Fatalf("StillLeads: %v", err)
	}
	c := ec.cands[first.idx]
	c.mu.Lock()
	sess := c.termSess
	c.mu.Unlock()
	other := ec.stores[(first.idx+1)%3].Client()
	if _, err := other.Delete(ctx, sess.key); err != nil { // by hand, from another member
		t.Fatal(err)
	}
	if err := first.term.StillLeads(ctx); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("StillLeads after the key's deletion: %v, want ErrNotLeader", err)
	}
	ended(t, first.term, time.Second) // StillLeads ended it
}

// Every candidate keeps writing with the last term it received, whether
// or not it still leads (a leader that does not know it was replaced),
// while the leaders are paused in turn: the fences alone must keep the
// log of successful writes in term order.
func TestElectionFencedWritesExclusive(t *testing.T) {
	ec := newElectionCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	first := ec.next(t, 30*time.Second, nil)
	if err := ec.stores[first.idx].Commit(ctx, store.Create("/log", nil)); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var wins [3]atomic.Int64
	for i := range ec.cands {
		wg.Go(func() {
			for n := 0; wctx.Err() == nil; n++ {
				term := ec.latest[i].Load()
				if term == nil {
					time.Sleep(10 * time.Millisecond) // pacing, not waiting for an event
					continue
				}
				v := strconv.FormatInt(term.Seq(), 10)
				if err := ec.stores[i].Commit(wctx, append(term.Fence(), store.Create(fmt.Sprintf("/log/c%d-%d", i, n), []byte(v)))...); err == nil {
					wins[i].Add(1)
				} else {
					time.Sleep(5 * time.Millisecond) // pacing
				}
			}
		})
	}
	leader := first
	for range 2 {
		ec.cands[leader.idx].hold.Store(true)
		ended(t, leader.term, 5*time.Second)
		next := ec.next(t, 15*time.Second, &leader)
		ec.cands[leader.idx].hold.Store(false)
		if next.term.Seq() <= leader.term.Seq() {
			t.Fatalf("term %d after term %d", next.term.Seq(), leader.term.Seq())
		}
		t.Logf("c%d term %d paused; c%d leads in term %d", leader.idx, leader.term.Seq(), next.idx, next.term.Seq())
		leader = next
	}
	// The last leader's writes commit too (bounded poll).
	for base, deadline := wins[leader.idx].Load(), time.Now().Add(10*time.Second); wins[leader.idx].Load() < base+5; {
		if time.Now().After(deadline) {
			t.Fatalf("c%d wrote nothing in term %d", leader.idx, leader.term.Seq())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wg.Wait()
	resp, err := ec.stores[0].Client().Get(ctx, ec.stores[0].ChildrenKey("/log"), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, kv := range resp.Kvs {
		_, v, err := etcdstore.DecodeValue(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(string(v), 10, 64)
		seqs = append(seqs, n)
	}
	if !slices.IsSorted(seqs) {
		t.Fatalf("fenced writes out of term order (two leaders' writes both committed): %v", seqs)
	}
	terms := slices.Compact(slices.Clone(seqs))
	t.Logf("%d fenced writes in terms %v (wins per candidate %d %d %d)", len(seqs), terms, wins[0].Load(), wins[1].Load(), wins[2].Load())
	if len(terms) < 3 {
		t.Fatalf("writes in terms %v: want the writes of the three terms", terms)
	}
}

// TestElectionSlowRenewalsKeepTheTerm: renewals that etcd answers 1.2 s
// late (more than half the 2 s TTL: a cluster applying a backlog) but
// that renew the lease keep the leader's term, as they overlap; one
// renewal at a time, each given half the TTL, confirmed none and ended
// the term within a TTL (the 503s of the registrations at load). The TTL
// is 2 s, not the 1 s of the other tests, so that the 0.8 s each renewal
// has left for etcd's own answer holds on a loaded machine too.
func TestElectionSlowRenewalsKeepTheTerm(t *testing.T) {
	ec := newElectionCluster(t, func(c *ElectionConfig) { c.TTL = 2 * time.Second })
	first := ec.next(t, 30*time.Second, nil)
	ec.cands[first.idx].slow.Store(int64(1200 * time.Millisecond))
	// Over three TTLs the term stays in force (a span observed, not a wait
	// for an event).
	select {
	case <-first.term.Context().Done():
		t.Fatalf("term ended under late renewals: %v", context.Cause(first.term.Context()))
	case <-time.After(6 * time.Second):
	}
	ec.cands[first.idx].slow.Store(0)
	if err := fencedPut(t.Context(), ec.stores[first.idx], first.term, "/slow", "x"); err != nil {
		t.Fatalf("a fenced write of the term kept: %v", err)
	}
}

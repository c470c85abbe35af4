package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/store"
	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// soloCandidate is one candidate on a one-member cluster; its terms come
// on the returned channel.
func soloCandidate(t *testing.T) (*Candidate, *etcdstore.Store) {
	t.Helper()
	m := startMembers(t, 1)[0]
	s := openStore(t, m.Endpoints(), etcdstore.Options{})
	c := NewCandidate(ElectionConfig{Store: s, Dir: "/ha/election", Self: election.Member{ID: "c0"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c, s
}

// nextTerm waits (bounded) for the candidate's next term.
func nextTerm(t *testing.T, c *Candidate, within time.Duration) *election.Term {
	t.Helper()
	select {
	case term := <-c.Terms():
		return term
	case <-time.After(within):
		t.Fatalf("no term within %v", within)
		return nil
	}
}

// checkSuccession checks that next, a term of the same key after prev
// ended, is another leadership: a higher number, prev's fence and
// StillLeads refused, next's accepted.
func checkSuccession(t *testing.T, s *etcdstore.Store, prev, next *election.Term) {
	t.Helper()
	ctx := t.Context()
	if next.Node() != prev.Node() {
		t.Fatalf("term %d under %s after term %d under %s: want the same key", next.Seq(), next.Node(), prev.Seq(), prev.Node())
	}
	if next.Seq() <= prev.Seq() {
		t.Fatalf("term %d after term %d: numbers must grow with every leadership", next.Seq(), prev.Seq())
	}
	if err := fencedPut(ctx, s, prev, "/w", "old"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a write behind term %d's fence after term %d began: %v, want ErrConflict", prev.Seq(), next.Seq(), err)
	}
	if err := prev.StillLeads(ctx); !errors.Is(err, election.ErrNotLeader) {
		t.Fatalf("StillLeads of the ended term: %v", err)
	}
	if err := fencedPut(ctx, s, next, "/w", "new"); err != nil {
		t.Fatalf("a write of the new term %d: %v", next.Seq(), err)
	}
	if err := next.StillLeads(ctx); err != nil {
		t.Fatalf("StillLeads of the new term: %v", err)
	}
}

// A candidate that leads again under the key it still holds (its term
// ended while the key lived: a loop failed, or its renewals were not
// confirmed in time though etcd renewed the lease) starts another
// leadership: the key is written again, the write's revision is the new
// term's number, higher than every number before it, and the old term's
// fenced writes are refused from then on. A new term with the old one's
// number would leave the old term's fence holding, and its writes
// committing.
func TestElectionTermAfterAnEndIsNewer(t *testing.T) {
	c, s := soloCandidate(t)
	first := nextTerm(t, c, 30*time.Second)
	if err := fencedPut(t.Context(), s, first, "/w", "first"); err != nil {
		t.Fatalf("a write of the first term: %v", err)
	}

	// A loop of the term failed (leader.Run ends the term).
	first.End(errors.New("a loop failed"))
	second := nextTerm(t, c, 15*time.Second)
	checkSuccession(t, s, first, second)

	// Renewals reach etcd but their answers come later than the TTL: the
	// term ends unconfirmed while its lease, and so its key, lives on.
	c.slow.Store(int64(3 * time.Second))
	ended(t, second, 10*time.Second)
	if !errors.Is(context.Cause(second.Context()), election.ErrLeaseLapse) {
		t.Fatalf("the term ended for %v, want its lease's lapse", context.Cause(second.Context()))
	}
	c.mu.Lock()
	sess := c.sess
	c.mu.Unlock()
	if resp, err := s.Client().Get(t.Context(), sess.key); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the key after the lapse: %v %v, want it alive (the lease renewed)", resp, err)
	}
	c.slow.Store(0)
	third := nextTerm(t, c, 15*time.Second)
	checkSuccession(t, s, second, third)
	if err := fencedPut(t.Context(), s, first, "/w", "older"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a write behind the first term's fence: %v, want ErrConflict", err)
	}
	t.Logf("terms %d, %d, %d under %s", first.Seq(), second.Seq(), third.Seq(), third.Node())
}

// A standby's key, created while another key led, numbers none of its
// terms: each term is numbered by the write of its key that begins it, so
// a term after the leader's second one (its first ended while its key
// lived) has the higher number. Numbered by its key's create_revision,
// the standby's first term would be lower than that second term, and
// its launches would be taken for a stale term's.
func TestElectionTermsGrowAcrossCandidates(t *testing.T) {
	m := startMembers(t, 1)[0]
	s := openStore(t, m.Endpoints(), etcdstore.Options{})
	start := func(id string) (*Candidate, func()) {
		c := NewCandidate(ElectionConfig{Store: s, Dir: "/ha/election", Self: election.Member{ID: id}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Run(ctx) }()
		stop := func() { cancel(); <-done }
		t.Cleanup(stop)
		return c, stop
	}
	a, stopA := start("a")
	first := nextTerm(t, a, 30*time.Second)

	dir := s.ChildrenKey("/ha/election")
	w := s.Client().Watch(t.Context(), dir, clientv3.WithPrefix(), clientv3.WithFilterDelete())
	b, _ := start("b")
	select { // b's key is created, a's still the lowest
	case <-w:
	case <-time.After(30 * time.Second):
		t.Fatal("the standby's key was not created")
	}

	first.End(errors.New("a loop failed"))
	second := nextTerm(t, a, 15*time.Second)
	if second.Seq() <= first.Seq() {
		t.Fatalf("term %d after term %d", second.Seq(), first.Seq())
	}
	stopA() // a's key goes: b leads
	third := nextTerm(t, b, 30*time.Second)
	if third.Seq() <= second.Seq() {
		t.Fatalf("the standby's term %d began after term %d: numbers must grow with every leadership", third.Seq(), second.Seq())
	}
	if err := fencedPut(t.Context(), s, third, "/w", "b"); err != nil {
		t.Fatalf("a write of the standby's term: %v", err)
	}
	t.Logf("terms %d, %d (under %s), %d (under %s)", first.Seq(), second.Seq(), second.Node(), third.Seq(), third.Node())
}

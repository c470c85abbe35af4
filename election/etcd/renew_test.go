package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/election"
	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// peerProxies starts n members whose peer traffic passes through an HTTP
// proxy in front of each (advertised as its peer URL); while *hold is
// set, the proxies answer a renewal a follower forwards to the raft
// leader (etcd's /leases) that much later: what a raft leader applying a
// backlog does, as it answers one only once it has applied what it had
// committed.
func peerProxies(t *testing.T, n int, hold *atomic.Int64) []*etcdstore.Member {
	t.Helper()
	cfgs := make([]etcdstore.MemberConfig, n)
	var peers []etcdstore.Peer
	for i := range cfgs {
		cfgs[i] = etcdtest.Config(t, fmt.Sprintf("m%d", i))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		real, err := url.Parse(cfgs[i].PeerURL)
		if err != nil {
			t.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(real)
		rp.FlushInterval = -1 // raft's streams
		rp.ErrorLog = log.New(io.Discard, "", 0)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if d := time.Duration(hold.Load()); d > 0 && r.URL.Path == "/leases" {
				timer := time.NewTimer(d)
				select {
				case <-timer.C:
				case <-r.Context().Done():
				}
				timer.Stop()
			}
			rp.ServeHTTP(w, r)
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		cfgs[i].ListenPeerURL, cfgs[i].PeerURL = cfgs[i].PeerURL, "http://"+ln.Addr().String()
		peers = append(peers, etcdstore.Peer{Name: cfgs[i].Name, URL: cfgs[i].PeerURL})
	}
	ms := make([]*etcdstore.Member, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range cfgs {
		cfgs[i].InitialCluster = peers
		wg.Go(func() { ms[i], errs[i] = etcdstore.StartMember(context.Background(), cfgs[i]) })
	}
	wg.Wait()
	for _, m := range ms {
		if m != nil {
			t.Cleanup(func() { _ = m.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start %d members behind proxies: %v", n, err)
	}
	return ms
}

// TestElectionRenewsAtTheRaftLeader: a leader whose member follows another
// (the scheduler that leads hands the raft leadership on) keeps its term
// while the raft leader answers forwarded renewals 1.5 s late, past the
// 1 s TTL: its renewals go to the raft leader's member directly, which
// answers them without waiting for its apply. Forwarded by its own member,
// none was answered within the TTL, the lease expired on the server and
// the term ended (terms lost while 100,000 jobs were registered).
func TestElectionRenewsAtTheRaftLeader(t *testing.T) {
	var hold atomic.Int64
	ms := peerProxies(t, 3, &hold)
	f := -1
	for deadline := time.Now().Add(30 * time.Second); f < 0 && time.Now().Before(deadline); {
		for i, m := range ms {
			if !m.IsLeader() && ms[(i+1)%3].IsLeader() || !m.IsLeader() && ms[(i+2)%3].IsLeader() {
				f = i
				break
			}
		}
		if f < 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if f < 0 {
		t.Fatal("no raft leader within 30 s")
	}
	s := openStore(t, nil, etcdstore.Options{Member: ms[f], LocalPlans: true, DialTimeout: 5 * time.Second})
	c := NewCandidate(ElectionConfig{Store: s, Dir: "/ha/election", Self: election.Member{ID: "c", URL: "http://127.0.0.1:8000"}})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	var term *election.Term
	select {
	case term = <-c.Terms():
	case <-time.After(30 * time.Second):
		t.Fatal("no term within 30 s")
	}
	hold.Store(int64(1500 * time.Millisecond))
	// Over three TTLs the term stays in force (a span observed, not a wait
	// for an event).
	select {
	case <-term.Context().Done():
		t.Fatalf("term ended while forwarded renewals were held (its member a follower: %v): %v", !ms[f].IsLeader(), context.Cause(term.Context()))
	case <-time.After(3 * time.Second):
	}
	if err := fencedPut(t.Context(), s, term, "/renewed", "x"); err != nil {
		t.Fatalf("a fenced write of the term kept: %v", err)
	}
}

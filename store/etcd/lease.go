package etcd

import (
	"context"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// KeepAliveOnce renews a lease once. On the scheduler's own member
// (Options.Member) that follows another, the renewal goes to the raft
// leader's member through its client URL, not through the own member.
//
// etcd renews a lease on its raft leader only. A renewal that reaches
// the raft leader over gRPC is answered at once (FastLeaseKeepAlive:
// no wait for its apply), but one a follower forwards over the peer
// transport waits until the raft leader has applied every entry it had
// committed, for up to a second: under a write load (registrations by
// the thousand, a launch backlog) that took 0.3-0.7 s and at times over
// the 1 s TTL, so the lease expired on the server while its candidate
// renewed it every 167 ms, and the scheduler that leads keeps the raft
// leadership on another member (Member.HandOff): its renewals were
// always the forwarded ones. Only while the own member runs and follows
// a leader: a renewal must not outlive the member the scheduler's
// writes go through (see inProcess).
func (s *Store) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	return s.leaseClient().KeepAliveOnce(ctx, id)
}

// leaseClient is the client a renewal goes through: a client of the raft
// leader's member when the own member follows it, else the store's.
func (s *Store) leaseClient() *clientv3.Client {
	if s.member == nil {
		return s.cli
	}
	urls := s.member.leaderClientURLs()
	if len(urls) == 0 {
		return s.cli // the own member leads, has no leader or has stopped: in-process
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	at := strings.Join(urls, ",")
	if s.leaseCli != nil && s.leaseAt == at {
		return s.leaseCli
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 2 * time.Second,
		DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: 5 * time.Second, Logger: quietZap()})
	if err != nil {
		return s.cli
	}
	if old := s.leaseCli; old != nil {
		// renewals in flight on it end by their own bound (a TTL)
		time.AfterFunc(leaseClientGrace, func() { _ = old.Close() })
	}
	s.leaseCli, s.leaseAt = cli, at
	return cli
}

// leaseClientGrace is how long a client of a former raft leader stays
// open for the renewals sent through it.
const leaseClientGrace = 5 * time.Second

// closeLeaseClient closes the client of the raft leader's member.
func (s *Store) closeLeaseClient() {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.leaseCli != nil {
		_ = s.leaseCli.Close()
		s.leaseCli = nil
	}
}

// leaderClientURLs are the client URLs of the member that leads the
// cluster when that is another member and this one runs; nil otherwise.
func (m *Member) leaderClientURLs() []string {
	srv := m.e.Server
	select {
	case <-srv.StopNotify():
		return nil
	default:
	}
	lead := srv.Leader()
	if lead == 0 || lead == srv.MemberID() {
		return nil
	}
	if mm := srv.Cluster().Member(lead); mm != nil {
		return slices.Clone(mm.ClientURLs)
	}
	return nil
}

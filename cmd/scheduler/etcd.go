package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/election"
	etcdelection "github.com/ejcloud/elasticjob/election/etcd"
	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
)

// etcdBackend is the registry on etcd (registry=etcd): the store, and
// the member this process runs unless etcd_endpoints names an external
// cluster. Closing it closes both, the member last.
type etcdBackend struct {
	*etcdstore.Store
	member *etcdstore.Member // nil with etcd_endpoints
}

func (b *etcdBackend) Close() error {
	err := b.Store.Close()
	if b.member != nil {
		_ = b.member.Close()
	}
	return err
}

// etcdMemberConfig is the embedded member of registry=etcd, in
// data_dir/etcd.
func etcdMemberConfig(cfg config.Config) etcdstore.MemberConfig {
	var peers []etcdstore.Peer
	for _, p := range cfg.EtcdPeers() {
		peers = append(peers, etcdstore.Peer{Name: p.Name, URL: p.URL})
	}
	return etcdstore.MemberConfig{Name: cfg.EtcdMemberName(), Dir: cfg.EtcdDir(), PeerURL: cfg.EtcdPeerURL(), ListenPeerURL: cfg.Etcd.ListenPeerURL,
		ClientURL: cfg.Etcd.ClientURL, InitialCluster: peers, Join: cfg.Etcd.Join, ClusterToken: cfg.Etcd.Token,
		Heartbeat: cfg.Etcd.Heartbeat, Election: cfg.Etcd.Election, QuotaBytes: cfg.Etcd.Quota,
		CatchUpEntries: uint64(cfg.Etcd.CatchUpEntries), AutoCompactionRetention: compactionRetention(cfg.Etcd.CompactionRetention),
		MaxTxnOps: etcdstore.EmbeddedMaxTxnOps, // a fire instant's commit in one flat transaction
		// the other members may start minutes apart (a rolling restart, an operator)
		StartTimeout: 5 * time.Minute}
}

// compactionRetention is etcd_compaction_retention as etcd reads it (""
// when unset: the member's default).
func compactionRetention(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}

// openEtcd starts this scheduler's member (it waits for a quorum of
// etcd_peers) and opens the store on it, or on etcd_endpoints.
func openEtcd(ctx context.Context, cfg config.Config, log *slog.Logger) (*etcdBackend, error) {
	b := &etcdBackend{}
	endpoints := cfg.EtcdEndpoints()
	maxOps := 0 // an external cluster: etcd's default --max-txn-ops
	var own *etcdstore.Member
	if len(endpoints) == 0 {
		mc := etcdMemberConfig(cfg)
		if cfg.LogLevel == "debug" {
			mc.Logger, _ = zap.NewDevelopment()
		}
		log.Info("starting the etcd member", "name", mc.Name, "dir", mc.Dir, "peer_url", mc.PeerURL, "client_url", mc.ClientURL,
			"peers", cfg.Etcd.Peers, "heartbeat", mc.Heartbeat, "election_timeout", mc.Election)
		m, err := etcdstore.StartMember(ctx, mc)
		if err != nil {
			return nil, fmt.Errorf("registry=etcd: %w%s", err, lostDirHint(err, mc.Name, mc.Dir))
		}
		b.member, own, endpoints, maxOps = m, m, m.Endpoints(), int(mc.MaxTxnOps)
	}
	// On its own member the store calls the member in-process and plans
	// its commits from the member's applied state (docs/benchmarks.md,
	// the etcd registry).
	st, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: endpoints, Member: own, LocalPlans: own != nil,
		Prefix: cfg.Etcd.Prefix, MaxTxnOps: maxOps, Logger: log})
	if err != nil {
		if b.member != nil {
			_ = b.member.Close()
		}
		return nil, fmt.Errorf("open etcd registry %s: %w", strings.Join(endpoints, ","), err)
	}
	b.Store = st
	return b, nil
}

// etcdLeadership is the election on the registry's etcd cluster.
func etcdLeadership(cfg config.Config, b *etcdBackend, self election.Member, log *slog.Logger) leadership {
	cand := etcdelection.NewCandidate(etcdelection.ElectionConfig{Store: b.Store, Dir: electionDir, Self: self,
		TTL: cfg.Etcd.LeaseTTL, Clock: clock.Real{}, Log: log.With("subsystem", "election")})
	if b.member == nil {
		return cand
	}
	return &raftAside{Candidate: cand, member: b.member, log: log.With("subsystem", "election")}
}

// raftAside is the election of a scheduler with a member of its own: while
// it leads, its member hands the raft leadership to another member
// (Member.HandOff), so that the leader's death is one failover (its lease
// lapses, about etcd_lease_ttl) rather than a raft election followed by
// that lease extended by the election timeout plus its TTL.
type raftAside struct {
	*etcdelection.Candidate
	member *etcdstore.Member
	log    *slog.Logger
	// launched, when set (before Run), reports whether the term in force
	// has launched work (handOffDue).
	launched func() bool
}

// handOffEvery is how often a leader checks where the raft leadership is.
const handOffEvery = time.Second

// handOffMax is how long into a term its member keeps a raft leadership it
// holds while the term has not launched: a transfer drops the proposals
// under way (each sent again 50 ms later; on a loaded machine a transfer
// took over 5 s, and the new term lost its lease meanwhile), and a term's
// first seconds are its takeover (the catch-up write, the first launch
// commits), whose launches should not wait for it. Once the term has
// launched, the raft leadership is handed on at the next check. A leader
// dying before that pays the raft election it would have saved.
const handOffMax = 10 * time.Second

// handOffDue reports whether a leader's member should hand the raft
// leadership on now: this instance leads a term that has launched, or is
// past handOffMax.
func handOffDue(t *election.Term, now time.Time, launched bool) bool {
	return t != nil && (launched || now.Sub(t.Began()) >= handOffMax)
}

func (r *raftAside) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(handOffEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !handOffDue(r.Current(), time.Now(), r.launched != nil && r.launched()) {
				continue
			}
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			moved, err := r.member.HandOff(hctx)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				r.log.Warn("etcd: the leader's member could not hand the raft leadership on", "err", err)
			case moved:
				r.log.Info("etcd: the leader's member handed the raft leadership to another member")
			}
		}
	}()
	err := r.Candidate.Run(ctx)
	<-done
	return err
}

// engineFence is what a term checks before each call to the cluster
// engine (ACCEPT and so each launch or pod create, KILL, pod delete,
// SHUTDOWN, …): on etcd, a linearizable read finding the term's election
// key in place, shared by the calls of a quarter election timeout
// (proofWindow); elsewhere the term's lease (ZooKeeper) or nothing (one
// instance).
func engineFence(cfg config.Config, term *election.Term) func(context.Context) error {
	within := proofWindow(cfg)
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, proofTimeout)
		defer cancel()
		return holdForProof(ctx, term, within, leaseRecheck)
	}
}

// leaseRecheck is how often a call held back by a lapsed lease looks
// again (holdForProof).
const leaseRecheck = 20 * time.Millisecond

// holdForProof is term.Proven, where a fenced term's lapsed lease (a
// renewal answered late on a loaded machine) holds the call back until the
// lease is confirmed again, the term ends or ctx ends, instead of refusing
// it at once: a refused ACCEPT costs its tasks a round and its offers a
// trip back to the scheduler, and a lease renewed 100 ms late is not a
// lost leadership. A term whose lease stays unconfirmed for its hold ends
// (election.Term.Valid), and the call is refused then.
func holdForProof(ctx context.Context, term *election.Term, within, recheck time.Duration) error {
	for {
		err := term.Proven(ctx, within)
		if err == nil || !term.Fenced() || !errors.Is(err, election.ErrLeaseLapse) || term.Context().Err() != nil {
			return err
		}
		t := time.NewTimer(recheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-term.Context().Done():
			t.Stop()
			return term.Valid()
		case <-t.C:
		}
	}
}

// proofWindow is how long one proof read answers for the engine calls
// after it: well under the raft election timeout, the soonest another
// member could have been elected and a successor's lease granted.
func proofWindow(cfg config.Config) time.Duration { return cfg.Etcd.Election / 4 }

// proofTimeout bounds a proof read: an engine call waits no longer for
// the store, and is refused when it did not answer.
const proofTimeout = 2 * time.Second

// lostDirHint explains etcd's refusal of a member that starts afresh
// under a name its cluster already knows: its data directory was lost or
// replaced.
func lostDirHint(err error, name, dir string) string {
	if !strings.Contains(err.Error(), "has already been bootstrapped") {
		return ""
	}
	return fmt.Sprintf(" (the cluster knows member %s, but %s holds no data of it: its data directory was lost or replaced;"+
		" restore it, or remove member %s from the cluster and add it again empty)", name, dir, name)
}

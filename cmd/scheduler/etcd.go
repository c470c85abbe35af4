package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/election"
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
	return etcdstore.MemberConfig{Name: cfg.EtcdMemberName(), Dir: cfg.EtcdDir(), PeerURL: cfg.EtcdPeerURL(),
		ClientURL: cfg.Etcd.ClientURL, InitialCluster: peers, ClusterToken: cfg.Etcd.Token,
		Heartbeat: cfg.Etcd.Heartbeat, Election: cfg.Etcd.Election, QuotaBytes: cfg.Etcd.Quota,
		// the other members may start minutes apart (a rolling restart, an operator)
		StartTimeout: 5 * time.Minute}
}

// openEtcd starts this scheduler's member (it waits for a quorum of
// etcd_peers) and opens the store on it, or on etcd_endpoints.
func openEtcd(ctx context.Context, cfg config.Config, log *slog.Logger) (*etcdBackend, error) {
	b := &etcdBackend{}
	endpoints := cfg.EtcdEndpoints()
	if len(endpoints) == 0 {
		mc := etcdMemberConfig(cfg)
		if cfg.LogLevel == "debug" {
			mc.Logger, _ = zap.NewDevelopment()
		}
		log.Info("starting the etcd member", "name", mc.Name, "dir", mc.Dir, "peer_url", mc.PeerURL, "client_url", mc.ClientURL,
			"peers", cfg.Etcd.Peers, "heartbeat", mc.Heartbeat, "election_timeout", mc.Election)
		m, err := etcdstore.StartMember(ctx, mc)
		if err != nil {
			return nil, fmt.Errorf("registry=etcd: %w", err)
		}
		b.member, endpoints = m, m.Endpoints()
	}
	st, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: endpoints, Prefix: cfg.Etcd.Prefix, Logger: log})
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
	return etcdstore.NewCandidate(etcdstore.ElectionConfig{Store: b.Store, Dir: electionDir, Self: self,
		TTL: cfg.Etcd.LeaseTTL, Clock: clock.Real{}, Log: log.With("subsystem", "election")})
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
		return term.Proven(ctx, within)
	}
}

// proofWindow is how long one proof read answers for the engine calls
// after it: well under the raft election timeout, the soonest another
// member could have been elected and a successor's lease granted.
func proofWindow(cfg config.Config) time.Duration { return cfg.Etcd.Election / 4 }

// proofTimeout bounds a proof read: an engine call waits no longer for
// the store, and is refused when it did not answer.
const proofTimeout = 2 * time.Second

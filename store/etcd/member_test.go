package etcd

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// TestMemberKillRestart: what a member acknowledged survives its hard
// stop, alone and in a cluster (where the others go on meanwhile).
func TestMemberKillRestart(t *testing.T) {
	t.Run("Single", func(t *testing.T) {
		cfg := memberConfigs(t, 1)[0]
		m, err := StartMember(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := openStore(t, m.Endpoints(), Options{Prefix: "/kill"})
		if err := s.Commit(t.Context(), store.Create("/a/b", []byte("kept")), store.Put("/a/c", nil)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		m.Kill()
		m, err = StartMember(t.Context(), cfg)
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
		defer m.Close()
		s = openStore(t, m.Endpoints(), Options{Prefix: "/kill"})
		if n, err := s.Get(t.Context(), "/a/b"); err != nil || string(n.Value) != "kept" {
			t.Fatalf("after restart Get(/a/b) = %+v, %v", n, err)
		}
		if names, err := s.Children(t.Context(), "/a"); err != nil || len(names) != 2 {
			t.Fatalf("after restart Children(/a) = %v, %v", names, err)
		}
	})
	t.Run("Cluster", func(t *testing.T) {
		cfgs := memberConfigs(t, 3)
		ms := startMembers(t, cfgs)
		s := openStore(t, ms[0].Endpoints(), Options{Prefix: "/kill"})
		ctx := t.Context()
		if err := s.Commit(ctx, store.Put("/x", []byte("1"))); err != nil {
			t.Fatal(err)
		}
		ms[2].Kill()
		if err := s.Commit(ctx, store.Put("/y", []byte("2"))); err != nil { // two of three: a quorum
			t.Fatal(err)
		}
		m, err := StartMember(ctx, cfgs[2])
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
		ms[2] = m
		r := openStore(t, m.Endpoints(), Options{Prefix: "/kill"})
		for _, p := range []string{"/x", "/y"} { // linearizable reads: it caught up
			if _, err := r.Get(ctx, p); err != nil {
				t.Fatalf("Get(%s) through the restarted member: %v", p, err)
			}
		}
	})
}

// TestMemberForeignDir: a data directory of another cluster, or of
// another member, is refused before etcd starts.
func TestMemberForeignDir(t *testing.T) {
	cfg := memberConfigs(t, 1)[0]
	m, err := StartMember(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	other := cfg
	other.ClusterToken = "another-cluster"
	if _, err := StartMember(t.Context(), other); !errors.Is(err, ErrForeignDataDir) {
		t.Fatalf("start in another cluster's directory: %v, want ErrForeignDataDir", err)
	} else {
		t.Log(err)
	}
	renamed := cfg
	renamed.Name = "someone-else"
	renamed.InitialCluster = []Peer{{Name: renamed.Name, URL: renamed.PeerURL}}
	if _, err := StartMember(t.Context(), renamed); !errors.Is(err, ErrForeignDataDir) {
		t.Fatalf("start in another member's directory: %v, want ErrForeignDataDir", err)
	}
}

// TestMemberPeersDisagree: a member started with another token than the
// running members it lists is a cluster of its own; it fails its start
// with ErrPeersDisagree instead of waiting for a quorum.
func TestMemberPeersDisagree(t *testing.T) {
	cfgs := memberConfigs(t, 3)
	startMembers(t, cfgs[:2]) // two of three: a quorum
	odd := cfgs[2]
	odd.ClusterToken = "a-different-token"
	m, err := StartMember(t.Context(), odd)
	if m != nil {
		m.Close()
	}
	if !errors.Is(err, ErrPeersDisagree) {
		t.Fatalf("start with another token: %v, want ErrPeersDisagree", err)
	}
	t.Log(err)
}

// TestMemberConfig: a member missing from its own initial cluster is
// refused.
func TestMemberConfig(t *testing.T) {
	cfgs := memberConfigs(t, 2)
	c := cfgs[0]
	c.InitialCluster = cfgs[1].InitialCluster[1:]
	if _, err := StartMember(t.Context(), c); err == nil {
		t.Fatal("a member outside its initial cluster started")
	} else {
		t.Log(err)
	}
}

// TestMemberSettings: the timers, quota, compaction and transaction cap
// of a MemberConfig reach etcd.
func TestMemberSettings(t *testing.T) {
	c := memberConfigs(t, 1)[0]
	c.QuotaBytes = 64 << 20
	c.AutoCompactionMode, c.AutoCompactionRetention = "revision", "1000"
	c.MaxTxnOps = 256
	c.CatchUpEntries = 300
	m, err := StartMember(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ec := m.e.Config()
	if ec.TickMs != 50 || ec.ElectionMs != 500 || ec.QuotaBackendBytes != 64<<20 ||
		ec.AutoCompactionMode != "revision" || ec.AutoCompactionRetention != "1000" || ec.MaxTxnOps != 256 || ec.SnapshotCatchUpEntries != 300 {
		t.Fatalf("etcd runs with heartbeat %d ms, election %d ms, quota %d, compaction %s %s, max txn ops %d, catch-up entries %d",
			ec.TickMs, ec.ElectionMs, ec.QuotaBackendBytes, ec.AutoCompactionMode, ec.AutoCompactionRetention, ec.MaxTxnOps, ec.SnapshotCatchUpEntries)
	}
	// Unset, the memory bounds are the scheduler's, not etcd's (5,000
	// entries; no compaction).
	d := memberConfigs(t, 1)[0]
	if err := d.defaults(); err != nil {
		t.Fatal(err)
	}
	dc, err := d.embed()
	if err != nil {
		t.Fatal(err)
	}
	if dc.SnapshotCatchUpEntries != DefaultCatchUpEntries || dc.AutoCompactionMode != "periodic" || dc.AutoCompactionRetention != DefaultCompactionRetention {
		t.Fatalf("defaults: catch-up entries %d, compaction %s %s", dc.SnapshotCatchUpEntries, dc.AutoCompactionMode, dc.AutoCompactionRetention)
	}
	if !m.IsLeader() {
		t.Fatal("a member alone does not lead")
	}
	bad := memberConfigs(t, 1)[0]
	bad.Heartbeat, bad.Election = 100*time.Millisecond, 200*time.Millisecond
	if _, err := StartMember(t.Context(), bad); err == nil {
		t.Fatal("an election timeout of two heartbeats was accepted")
	} else {
		t.Log(err)
	}
}

// A peer URL by DNS name (a StatefulSet pod's stable name) is advertised as
// it is and listened on every interface at its port; an IP is listened on as
// it is.
func TestListenURLOfANamedPeer(t *testing.T) {
	for in, want := range map[string]string{
		"http://elasticjob-scheduler-0.elasticjob-scheduler-peers.elasticjob.svc:2380": "http://0.0.0.0:2380",
		"http://127.0.0.1:2380": "http://127.0.0.1:2380",
		"http://[::1]:2380":     "http://[::1]:2380",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := listenURL(*u); got.String() != want {
			t.Errorf("listenURL(%s) = %s, want %s", in, got.String(), want)
		}
	}
}

// The embedded member's configuration of a StatefulSet pod (its peers by
// stable DNS names, deploy/kubernetes/ha) is one etcd accepts: it advertises
// the names and listens on every interface at its port.
func TestEmbedConfigOfNamedPeers(t *testing.T) {
	peers := []Peer{}
	for i := range 3 {
		name := fmt.Sprintf("elasticjob-scheduler-%d", i)
		peers = append(peers, Peer{Name: name, URL: "http://" + name + ".elasticjob-scheduler-peers.elasticjob.svc:2380"})
	}
	c := MemberConfig{Name: peers[1].Name, Dir: t.TempDir(), PeerURL: peers[1].URL, ClientURL: "http://127.0.0.1:2379", InitialCluster: peers}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	ec, err := c.embed()
	if err != nil {
		t.Fatalf("etcd refuses the named peers: %v", err)
	}
	if l, a := ec.ListenPeerUrls[0].String(), ec.AdvertisePeerUrls[0].String(); l != "http://0.0.0.0:2380" || a != peers[1].URL {
		t.Errorf("listen %s, advertise %s: want every interface at 2380, the stable name", l, a)
	}
	if !strings.Contains(ec.InitialCluster, peers[2].Name+"="+peers[2].URL) {
		t.Errorf("initial cluster %s", ec.InitialCluster)
	}
}

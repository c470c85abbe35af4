package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Peer is one member of a static initial cluster.
type Peer struct {
	Name string
	URL  string // its peer URL ("http://127.0.0.1:2380")
}

// MemberConfig configures an embedded etcd member.
type MemberConfig struct {
	Name      string // unique in the cluster
	Dir       string // data directory (created if missing)
	PeerURL   string // where the other members reach it
	ClientURL string // where clients reach it
	// InitialCluster is every member of a new cluster, this one
	// included; empty means a cluster of this member alone. A member
	// whose data directory holds a cluster already rejoins that one.
	InitialCluster []Peer
	// Join: the member joins a running cluster that added it
	// (Admin.AddMember, whose InitialCluster it takes) rather than
	// bootstrapping a new one; its data directory must be empty.
	Join bool
	// ClusterToken tells clusters bootstrapped from the same peer list
	// apart ("elasticjob-cloud" when empty); every member must agree.
	ClusterToken string
	// Heartbeat and Election are the raft timers (etcd's defaults, 100 ms
	// and 1 s, when zero); Election must be at least 5 heartbeats.
	Heartbeat, Election time.Duration
	// QuotaBytes is the backend's size quota (etcd's 2 GiB when 0).
	QuotaBytes int64
	// AutoCompactionMode is "periodic" (default) or "revision", and
	// AutoCompactionRetention its retention ("1m" or "1000";
	// DefaultCompactionRetention when empty, "0" turns it off). A
	// periodic retention r keeps between r and 2r of revisions: every
	// key write's revision in the member's in-memory key index and its
	// value in the database file (mapped, so part of the RSS).
	AutoCompactionMode, AutoCompactionRetention string
	// CatchUpEntries is how many of the latest raft entries every member
	// keeps in memory (DefaultCatchUpEntries when 0), whole: a follower
	// that falls further behind is sent a snapshot of the database
	// instead.
	CatchUpEntries uint64
	// MaxTxnOps is the cap on a transaction's operations (etcd's 128 when 0).
	MaxTxnOps uint
	// StartTimeout bounds the wait for the member to join its cluster
	// (30 s when 0).
	StartTimeout time.Duration
	// Logger gets etcd's own log (discarded when nil).
	Logger *zap.Logger
	// ListenPeerURL is where it listens for the other members when that
	// is not PeerURL (a proxy stands in front of it); empty: PeerURL.
	ListenPeerURL string
}

// The member's memory bounds (docs/benchmarks.md, leader memory). etcd
// v3.7 keeps its last 5,000 raft entries in memory, whole, and the
// scheduler's entries are whole commits (a launch round, a batch of
// status updates or history rows): 85 MB of a 20,000-job replica's heap
// was its raft log (TestMemberRaftLogHeapIsBounded). And until the
// periodic compaction each key write's revision stays, ≈ 120 B in the
// key index and ≈ 370 B in the database file
// (BenchmarkMemberRevisionHistory), both freed by compaction: at
// thousands of key writes a second, an hour's retention (held up to two)
// is GBs, up to the 2 GiB quota.
const (
	// DefaultCatchUpEntries: raft entries kept in memory for a lagging
	// follower (etcd's 5,000). At the scheduler's commit rates, tens a
	// second, it covers tens of seconds of a follower's absence; one
	// further behind is sent a snapshot of the database.
	DefaultCatchUpEntries = 1000
	// DefaultCompactionRetention is the periodic compaction's retention
	// (Kubernetes compacts every 5 min): one to two minutes of revisions
	// kept, ≈ 120 B of the member's heap and 370 B of its database each,
	// thousands a second at 100,000 jobs (2m kept twice as many). A watch
	// resumed after a longer disconnection re-reads its subtree; the
	// history log's readers read from their position, which compaction
	// never removes.
	DefaultCompactionRetention = "1m"
)

// Member is a running embedded etcd member.
type Member struct {
	cfg  MemberConfig
	e    *embed.Etcd
	stop sync.Once
}

// Errors of StartMember, wrapped with the details.
var (
	// ErrForeignDataDir: the data directory holds another cluster's member.
	ErrForeignDataDir = errors.New("etcd member: data directory of another cluster")
	// ErrPeersDisagree: a peer answers as a member of another cluster (the
	// members' initial clusters or tokens differ).
	ErrPeersDisagree = errors.New("etcd member: peers disagree on the cluster")
)

// identityFile, in the data directory, names the cluster and member the
// directory belongs to.
const identityFile = "elasticjob-member.json"

type identity struct {
	Name    string `json:"name"`
	Token   string `json:"cluster_token"`
	Cluster string `json:"initial_cluster"`
}

func (c *MemberConfig) defaults() error {
	if c.Name == "" || c.Dir == "" || c.PeerURL == "" || c.ClientURL == "" {
		return errors.New("etcd member: name, data directory, peer URL and client URL are required")
	}
	if c.ClusterToken == "" {
		c.ClusterToken = "elasticjob-cloud"
	}
	if len(c.InitialCluster) == 0 {
		c.InitialCluster = []Peer{{Name: c.Name, URL: c.PeerURL}}
	}
	if !slices.Contains(c.InitialCluster, Peer{Name: c.Name, URL: c.PeerURL}) {
		return fmt.Errorf("etcd member %s: the initial cluster %s does not list it at %s", c.Name, clusterString(c.InitialCluster), c.PeerURL)
	}
	names := map[string]bool{}
	for _, p := range c.InitialCluster {
		if names[p.Name] {
			return fmt.Errorf("etcd member %s: the initial cluster %s names %s twice", c.Name, clusterString(c.InitialCluster), p.Name)
		}
		names[p.Name] = true
	}
	if c.AutoCompactionMode == "" {
		c.AutoCompactionMode = "periodic"
	}
	if c.AutoCompactionRetention == "" {
		c.AutoCompactionRetention = DefaultCompactionRetention
	}
	if c.CatchUpEntries == 0 {
		c.CatchUpEntries = DefaultCatchUpEntries
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

func clusterString(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.Name + "=" + p.URL
	}
	return strings.Join(parts, ",")
}

// StartMember starts an embedded member and waits until it serves
// clients (its cluster has a leader and it has joined it).
func StartMember(ctx context.Context, c MemberConfig) (*Member, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	ec, err := c.embed()
	if err != nil {
		return nil, err
	}
	if err := claimDir(c); err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcd member %s: start: %w", c.Name, err)
	}
	m := &Member{cfg: c, e: e}
	if err := m.waitReady(ctx); err != nil {
		m.Kill()
		return nil, err
	}
	return m, nil
}

func (c MemberConfig) embed() (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Name, ec.Dir = c.Name, c.Dir
	pu, err := url.Parse(c.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd member %s: peer URL: %w", c.Name, err)
	}
	cu, err := url.Parse(c.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd member %s: client URL: %w", c.Name, err)
	}
	lpu := listenURL(*pu)
	if c.ListenPeerURL != "" {
		u, err := url.Parse(c.ListenPeerURL)
		if err != nil {
			return nil, fmt.Errorf("etcd member %s: listen peer URL: %w", c.Name, err)
		}
		lpu = *u
	}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{lpu}, []url.URL{*pu}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.InitialCluster, ec.InitialClusterToken = clusterString(c.InitialCluster), c.ClusterToken
	ec.ClusterState = embed.ClusterStateFlagNew
	if c.Join {
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	if c.Heartbeat > 0 {
		ec.TickMs = uint(c.Heartbeat / time.Millisecond)
	}
	if c.Election > 0 {
		ec.ElectionMs = uint(c.Election / time.Millisecond)
	}
	if c.QuotaBytes > 0 {
		ec.QuotaBackendBytes = c.QuotaBytes
	}
	if c.MaxTxnOps > 0 {
		ec.MaxTxnOps = c.MaxTxnOps
	}
	ec.AutoCompactionMode, ec.AutoCompactionRetention = c.AutoCompactionMode, c.AutoCompactionRetention
	ec.SnapshotCatchUpEntries = c.CatchUpEntries
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(c.Logger)
	ec.ListenMetricsUrls = nil
	if err := ec.Validate(); err != nil {
		return nil, fmt.Errorf("etcd member %s: %w", c.Name, err)
	}
	return ec, nil
}

// listenURL is where a member listens for u: u itself when its host is an
// IP address, else every interface on u's port (a peer URL by DNS name, a
// StatefulSet pod's stable name, is advertised but cannot be bound).
func listenURL(u url.URL) url.URL {
	if net.ParseIP(u.Hostname()) != nil {
		return u
	}
	u.Host = net.JoinHostPort("0.0.0.0", u.Port())
	return u
}

// claimDir refuses a data directory that another cluster's (or another
// member's) member wrote, and marks a new one as this member's.
func claimDir(c MemberConfig) error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("etcd member %s: %w", c.Name, err)
	}
	f := filepath.Join(c.Dir, identityFile)
	want := identity{Name: c.Name, Token: c.ClusterToken, Cluster: clusterString(c.InitialCluster)}
	b, err := os.ReadFile(f)
	switch {
	case err == nil:
		var got identity
		if err := json.Unmarshal(b, &got); err != nil {
			return fmt.Errorf("etcd member %s: %s: %w", c.Name, f, err)
		}
		if got.Token != want.Token || got.Name != want.Name {
			return fmt.Errorf("%w: %s holds member %q of cluster %q (bootstrapped as %s), not member %q of %q: give this member an empty directory, or its own",
				ErrForeignDataDir, c.Dir, got.Name, got.Token, got.Cluster, want.Name, want.Token)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("etcd member %s: %w", c.Name, err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "member")); err == nil {
		return fmt.Errorf("%w: %s holds an etcd member this scheduler did not start (no %s): give this member an empty directory",
			ErrForeignDataDir, c.Dir, identityFile)
	}
	b, _ = json.MarshalIndent(want, "", "  ")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		return fmt.Errorf("etcd member %s: %w", c.Name, err)
	}
	return nil
}

// waitReady waits for the member to serve; meanwhile it asks its peers
// which cluster they are in, so that a peer bootstrapped from another
// peer list or token fails the start at once with ErrPeersDisagree
// rather than at the timeout.
func (m *Member) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.e.Server.ReadyNotify():
			return nil
		case err := <-m.e.Err():
			return fmt.Errorf("etcd member %s: %w", m.cfg.Name, err)
		case <-m.e.Server.StopNotify():
			return fmt.Errorf("etcd member %s: stopped while starting", m.cfg.Name)
		case <-tick.C:
			if err := m.checkPeers(ctx); err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("etcd member %s: not serving after %v (are a quorum of %s up, with the same initial cluster and token?): %w",
				m.cfg.Name, m.cfg.StartTimeout, clusterString(m.cfg.InitialCluster), ctx.Err())
		}
	}
}

func (m *Member) checkPeers(ctx context.Context) error {
	mine := m.e.Server.Cluster().ID().String()
	for _, p := range m.cfg.InitialCluster {
		if p.Name == m.cfg.Name {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimSuffix(p.URL, "/")+"/members", nil)
		if err != nil {
			cancel()
			return fmt.Errorf("etcd member %s: peer %s: %w", m.cfg.Name, p.Name, err)
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			continue // not up yet
		}
		resp.Body.Close()
		if theirs := resp.Header.Get("X-Etcd-Cluster-ID"); theirs != "" && theirs != mine {
			return fmt.Errorf("%w: peer %s (%s) is in cluster %s, member %s in %s: every member must be started with the same initial cluster (%s here) and token (%q here)",
				ErrPeersDisagree, p.Name, p.URL, theirs, m.cfg.Name, mine, clusterString(m.cfg.InitialCluster), m.cfg.ClusterToken)
		}
	}
	return nil
}

// Endpoints are the member's client URLs.
func (m *Member) Endpoints() []string { return []string{m.cfg.ClientURL} }

// Name is the member's name.
func (m *Member) Name() string { return m.cfg.Name }

// IsLeader reports whether the member leads its cluster now.
func (m *Member) IsLeader() bool { return m.e.Server.Leader() == m.e.Server.MemberID() }

// Client dials the member.
func (m *Member) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: m.Endpoints(), DialTimeout: 5 * time.Second, Logger: quietZap()})
}

// Close stops the member gracefully (a leader hands its leadership on
// first).
func (m *Member) Close() error {
	m.stop.Do(m.e.Close)
	return nil
}

// Kill stops the member the hard way, as a crash would as far as raft
// is concerned: no leadership transfer. What it acknowledged is already
// in its write-ahead log.
func (m *Member) Kill() {
	m.stop.Do(func() {
		m.e.Server.HardStop()
		m.e.Close()
	})
}

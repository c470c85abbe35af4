package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The registry backends (the registry setting).
const (
	RegistryEmbedded  = "embedded"  // SQLite in data_dir, one instance
	RegistryZooKeeper = "zookeeper" // zk_servers: the original's shape
	RegistryEtcd      = "etcd"      // an etcd member inside each scheduler, or etcd_endpoints
)

// Etcd is the registry on etcd (the etcd_* settings): an embedded member
// of a static cluster, or an external cluster's endpoints.
type Etcd struct {
	Name      string // etcd_name: this member's name (in Peers)
	Peers     string // etcd_peers: name=http://host:port,… of every member, this one included
	ClientURL string // etcd_client_url: where this member serves clients
	PeerURL   string // etcd_peer_url: where the other members reach this one (empty: its entry in Peers)
	Token     string // etcd_cluster_token
	Endpoints string // etcd_endpoints: an external cluster's client URLs (no embedded member)
	Prefix    string // etcd_prefix: the keys' prefix
	Heartbeat time.Duration
	Election  time.Duration
	LeaseTTL  time.Duration // etcd_lease_ttl: the election's lease
	Quota     int64         // etcd_quota_bytes
	// CatchUpEntries is etcd_catchup_entries: raft entries the member
	// keeps in memory for a lagging follower.
	CatchUpEntries int
	// CompactionRetention is etcd_compaction_retention: the history of
	// revisions the member keeps (periodic compaction).
	CompactionRetention time.Duration
	Join                bool // etcd_join: the member joins a running cluster that added it (ejctl cluster add)
	// ListenPeerURL is etcd_listen_peer_url: where the member listens for
	// the others when a proxy stands in front of it (empty: PeerURL).
	ListenPeerURL string
}

// EtcdPeer is one entry of etcd_peers.
type EtcdPeer struct{ Name, URL string }

func registrySettings() []setting {
	return []setting{
		{"registry", "", "where the registry and the leader election live: embedded (SQLite in data_dir, one scheduler; the default without zk_servers), zookeeper (zk_servers; the default with it, the original's shape) or etcd (an etcd member inside each scheduler, or etcd_endpoints)", func(c *Config, v string) error {
			switch v = strings.TrimSpace(v); v {
			case "", RegistryEmbedded, RegistryZooKeeper, RegistryEtcd:
				c.Registry = v
				return nil
			}
			return fmt.Errorf("registry: %q is not embedded, zookeeper or etcd", v)
		}},
		{"etcd_name", "", "registry=etcd: this scheduler's member name, one of etcd_peers (empty with a single member: default)", str(func(c *Config) *string { return &c.Etcd.Name })},
		{"etcd_peers", "", "registry=etcd: every member of the cluster as name=http://host:port (its peer URL), comma-separated, the same list on every scheduler (empty: a cluster of this member alone)", str(func(c *Config) *string { return &c.Etcd.Peers })},
		{"etcd_client_url", "http://127.0.0.1:2379", "registry=etcd: where this scheduler's member serves etcd clients", str(func(c *Config) *string { return &c.Etcd.ClientURL })},
		{"etcd_peer_url", "", "registry=etcd: where the other members reach this one (empty: its entry in etcd_peers, else http://127.0.0.1:2380)", str(func(c *Config) *string { return &c.Etcd.PeerURL })},
		{"etcd_listen_peer_url", "", "registry=etcd: where this scheduler's member listens for the other members when that is not etcd_peer_url (a proxy in front of it); empty: etcd_peer_url", str(func(c *Config) *string { return &c.Etcd.ListenPeerURL })},
		{"etcd_cluster_token", "elasticjob-cloud", "registry=etcd: tells clusters bootstrapped from the same peer list apart; every member must agree", str(func(c *Config) *string { return &c.Etcd.Token })},
		{"etcd_endpoints", "", "registry=etcd: client URLs of an external etcd cluster, comma-separated; set, no member runs inside the scheduler", str(func(c *Config) *string { return &c.Etcd.Endpoints })},
		{"etcd_prefix", "/elasticjob-cloud", "registry=etcd: prefix of every key (several schedulers' registries can share one etcd cluster)", str(func(c *Config) *string { return &c.Etcd.Prefix })},
		{"etcd_heartbeat", "50ms", "registry=etcd: raft heartbeat of the embedded member (the same on every member)", duration("etcd_heartbeat", func(c *Config) *time.Duration { return &c.Etcd.Heartbeat })},
		{"etcd_election_timeout", "500ms", "registry=etcd: raft election timeout of the embedded member, at least 5 heartbeats (the same on every member)", duration("etcd_election_timeout", func(c *Config) *time.Duration { return &c.Etcd.Election })},
		{"etcd_lease_ttl", "1s", "registry=etcd: lease of the scheduler election, whole seconds: a dead leader is replaced this long after its last renewal; a leader acts for half of it after each renewal", duration("etcd_lease_ttl", func(c *Config) *time.Duration { return &c.Etcd.LeaseTTL })},
		{"etcd_join", "false", "registry=etcd: the member joins a running cluster that added it (ejctl cluster add prints its etcd_peers) rather than bootstrapping one; its data directory must be empty the first time (a member that already joined restarts from its data as usual)", boolean("etcd_join", func(c *Config) *bool { return &c.Etcd.Join })},
		{"etcd_quota_bytes", "2GiB", "registry=etcd: size quota of the embedded member's database", func(c *Config, v string) error {
			n, err := parseSize(v)
			if err != nil || n == 0 {
				return fmt.Errorf("etcd_quota_bytes: %q is not a positive size like 2GiB", v)
			}
			c.Etcd.Quota = n
			return nil
		}},
		{"etcd_catchup_entries", "1000", "registry=etcd: the latest raft entries (commits) the embedded member keeps in memory, whole, for a follower that falls behind; one further behind is sent a snapshot of the database (etcd's default 5,000 held hundreds of MB at 100,000 jobs)", func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 100 {
				return fmt.Errorf("etcd_catchup_entries: %q is not a whole number of at least 100", v)
			}
			c.Etcd.CatchUpEntries = n
			return nil
		}},
		{"etcd_compaction_retention", "1m", "registry=etcd: the history of revisions the embedded member keeps (compacted every period to what is older than it): every key write's revision stays in memory and in the database until then (thousands a second at 100,000 jobs); a watch resumed after a longer disconnection re-reads its subtree", func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d < 30*time.Second {
				return fmt.Errorf("etcd_compaction_retention: %q is not a duration of at least 30s like 2m or 1h", v)
			}
			c.Etcd.CompactionRetention = d
			return nil
		}},
	}
}

func init() { settings = append(settings, registrySettings()...) }

// RegistryKind is the registry backend in force: the registry setting, or
// zookeeper when only zk_servers is set, else embedded.
func (c *Config) RegistryKind() string {
	switch {
	case c.Registry != "":
		return c.Registry
	case c.ZKServers != "":
		return RegistryZooKeeper
	}
	return RegistryEmbedded
}

// Replicated reports whether several schedulers share the registry (and
// elect a leader among them).
func (c *Config) Replicated() bool { return c.RegistryKind() != RegistryEmbedded }

// EtcdDir is the embedded member's data directory.
func (c *Config) EtcdDir() string { return filepath.Join(c.DataDir, "etcd") }

// EtcdMemberName is this member's name.
func (c *Config) EtcdMemberName() string {
	if c.Etcd.Name == "" {
		return "default"
	}
	return c.Etcd.Name
}

// EtcdPeerURL is where the other members reach this one.
func (c *Config) EtcdPeerURL() string {
	if c.Etcd.PeerURL != "" {
		return c.Etcd.PeerURL
	}
	peers, _ := parseEtcdPeers(c.Etcd.Peers)
	for _, p := range peers {
		if p.Name == c.EtcdMemberName() {
			return p.URL
		}
	}
	return "http://127.0.0.1:2380"
}

// EtcdPeers is etcd_peers parsed (nil: a cluster of this member alone).
func (c *Config) EtcdPeers() []EtcdPeer {
	peers, _ := parseEtcdPeers(c.Etcd.Peers)
	return peers
}

// EtcdEndpoints are etcd_endpoints' URLs (nil: the embedded member).
func (c *Config) EtcdEndpoints() []string { return splitList(c.Etcd.Endpoints) }

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseEtcdPeers(v string) ([]EtcdPeer, error) {
	var out []EtcdPeer
	names, urls := map[string]bool{}, map[string]bool{}
	for _, kv := range splitList(v) {
		name, u, ok := strings.Cut(kv, "=")
		name, u = strings.TrimSpace(name), strings.TrimSpace(u)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not name=http://host:port", kv)
		}
		if err := memberURL(u); err != nil {
			return nil, fmt.Errorf("%q: %w", kv, err)
		}
		if names[name] {
			return nil, fmt.Errorf("member %s is named twice", name)
		}
		if urls[u] {
			return nil, fmt.Errorf("%s is the peer URL of two members", u)
		}
		names[name], urls[u] = true, true
		out = append(out, EtcdPeer{Name: name, URL: u})
	}
	return out, nil
}

// memberURL checks an etcd member URL: http(s)://host:port and nothing more.
func memberURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Port() == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%q is not http://host:port", v)
	}
	return nil
}

func (c *Config) validateRegistry() []error {
	var errs []error
	kind := c.RegistryKind()
	if kind == RegistryZooKeeper && c.ZKServers == "" {
		errs = append(errs, errors.New("registry=zookeeper: set zk_servers"))
	}
	if kind != RegistryZooKeeper && c.ZKServers != "" {
		errs = append(errs, fmt.Errorf("zk_servers is set but registry is %s: drop one of them", kind))
	}
	if kind != RegistryEtcd {
		return errs
	}
	if c.Etcd.Prefix == "" || c.Etcd.Prefix[0] != '/' {
		errs = append(errs, fmt.Errorf("etcd_prefix: %q must start with /", c.Etcd.Prefix))
	}
	if eps := c.EtcdEndpoints(); len(eps) > 0 {
		for _, e := range eps {
			if err := memberURL(e); err != nil {
				errs = append(errs, fmt.Errorf("etcd_endpoints: %w", err))
			}
		}
		if c.Etcd.Peers != "" || c.Etcd.Name != "" || c.Etcd.PeerURL != "" || c.Etcd.Join {
			errs = append(errs, errors.New("etcd_endpoints names an external cluster: etcd_name, etcd_peers, etcd_peer_url and etcd_join configure the member inside the scheduler; set one or the other"))
		}
	} else {
		errs = append(errs, c.validateEtcdMember()...)
	}
	if c.Etcd.LeaseTTL < time.Second || c.Etcd.LeaseTTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("etcd_lease_ttl: %v must be a whole number of seconds, at least 1s (etcd's leases count seconds)", c.Etcd.LeaseTTL))
	}
	if len(c.EtcdPeers()) > 1 || len(c.EtcdEndpoints()) > 0 {
		if !c.SharedEngines() {
			errs = append(errs, errors.New("registry=etcd with several schedulers: they share one Mesos master and take over each other's tasks: set mesos_url too (on one machine, run bin/mesos-local and point mesos_url at it)"))
		}
	}
	return errs
}

func (c *Config) validateEtcdMember() []error {
	var errs []error
	if err := memberURL(c.Etcd.ClientURL); err != nil {
		errs = append(errs, fmt.Errorf("etcd_client_url: %w", err))
	}
	if c.Etcd.PeerURL != "" {
		if err := memberURL(c.Etcd.PeerURL); err != nil {
			errs = append(errs, fmt.Errorf("etcd_peer_url: %w", err))
		}
	}
	if c.Etcd.Heartbeat < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("etcd_heartbeat: %v is below 10ms", c.Etcd.Heartbeat))
	}
	if c.Etcd.Election < 5*c.Etcd.Heartbeat {
		errs = append(errs, fmt.Errorf("etcd_election_timeout: %v must be at least 5 heartbeats (etcd_heartbeat %v)", c.Etcd.Election, c.Etcd.Heartbeat))
	}
	peers, err := parseEtcdPeers(c.Etcd.Peers)
	if err != nil {
		return append(errs, fmt.Errorf("etcd_peers: %w", err))
	}
	if len(peers) == 0 {
		if c.Etcd.Join {
			errs = append(errs, errors.New("etcd_join: a joining member needs etcd_peers, the running members and itself (as ejctl cluster add printed them)"))
		}
		return errs
	}
	if c.Etcd.Name == "" {
		return append(errs, fmt.Errorf("etcd_name: required with etcd_peers (one of %s)", peerNames(peers)))
	}
	for _, p := range peers {
		if p.Name != c.Etcd.Name {
			continue
		}
		if c.Etcd.PeerURL != "" && c.Etcd.PeerURL != p.URL {
			errs = append(errs, fmt.Errorf("etcd_peer_url %s disagrees with etcd_peers, which gives member %s %s", c.Etcd.PeerURL, p.Name, p.URL))
		}
		if p.URL == c.Etcd.ClientURL {
			errs = append(errs, fmt.Errorf("etcd_client_url %s is also member %s's peer URL: give them different ports", c.Etcd.ClientURL, p.Name))
		}
		return errs
	}
	return append(errs, fmt.Errorf("etcd_name %s is not in etcd_peers (%s): list every member, this one included", c.Etcd.Name, peerNames(peers)))
}

func peerNames(peers []EtcdPeer) string {
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

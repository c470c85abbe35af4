package ejctl

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// A member that lost its disk is replaced with ejctl cluster remove and
// add, and the registry is backed up and restored with one command each,
// against the API on a real three-member embedded etcd cluster.
func TestClusterCommands(t *testing.T) {
	c := etcdtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := etcd.Open(ctx, etcd.Options{Endpoints: c.Endpoints(), Prefix: "/ejctl"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := newTestServer(t, api.Credentials{}, func(o *api.Options) { o.Operate.Replicated = etcd.NewAdmin(st, "/ha/election") })
	r := s.cli(t)

	out, _ := r.must(0, "cluster", "members")
	has(t, "members", out, "NAME", "HEALTHY", "LEADER", "m0", "m1", "m2")
	if n := strings.Count(out, " yes "); n < 3 {
		t.Errorf("members: want three healthy, got:\n%s", out)
	}

	lost := 2
	if c.Leader() == lost {
		lost = 1
	}
	name := c.Configs[lost].Name
	c.Kill(lost)
	c.RemoveDir(lost)
	r.must(2, "cluster", "remove", name) // no terminal, no --yes
	r.must(0, "cluster", "remove", name, "--yes")
	out, _ = r.must(0, "cluster", "add", name, c.Configs[lost].PeerURL)
	has(t, "add", out, "etcd_join=true", "etcd_peers=")
	peersLine := regexp.MustCompile(`etcd_peers=(\S+)`).FindStringSubmatch(out)
	peers, err := etcd.ParsePeers(peersLine[1])
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Configs[lost]
	cfg.InitialCluster, cfg.Join = peers, true
	m, err := etcd.StartMember(ctx, cfg)
	if err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	defer m.Close()
	out, _ = r.must(0, "cluster", "members")
	if n := strings.Count(out, " yes "); n < 3 {
		t.Errorf("members after the rejoin: want three healthy, got:\n%s", out)
	}

	if err := st.Commit(ctx, store.Put("/config/job/a", []byte("A"))); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "registry.ndjson")
	out, _ = r.must(0, "cluster", "backup", file)
	has(t, "backup", out, "backed up the registry to "+file, `"nodes":3`)
	if err := st.Commit(ctx, store.Set("/config/job/a", []byte("B"), store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	out, _ = r.must(0, "cluster", "restore", file, "--yes")
	has(t, "restore", out, "restored 3 nodes")
	if n, err := st.Get(ctx, "/config/job/a"); err != nil || string(n.Value) != "A" {
		t.Fatalf("after restore: %+v, %v", n, err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs := r.must(1, "cluster", "restore", bad, "--yes")
	has(t, "restore of a bad file", errs, "not a whole registry backup")
}

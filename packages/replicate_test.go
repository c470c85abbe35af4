package packages_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
)

// instance is one scheduler's API and package host, on a real HTTP server.
type instance struct {
	srv    *httptest.Server
	host   *packages.Host
	pulled chan error // each pull round's result
}

// cluster is n instances sharing one registry; each lists the others as peers.
type cluster struct {
	reg   *registry.Registry
	nodes []*instance
}

func newCluster(t *testing.T, n int, tweak func(*packages.Options)) *cluster {
	t.Helper()
	reg := registry.New(memory.New())
	return newClusterOn(t, n, func(int) *registry.Registry { return reg }, tweak)
}

// newClusterOn builds the instances on registries from regOf (instance i's
// own registry client, e.g. its own ZooKeeper session).
func newClusterOn(t *testing.T, n int, regOf func(i int) *registry.Registry, tweak func(*packages.Options)) *cluster {
	t.Helper()
	c := &cluster{reg: regOf(0)}
	key, err := packages.LoadKey(t.Context(), c.reg.Term().PackageKey())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	up := map[int]bool{}
	for i := range n {
		in := &instance{srv: httptest.NewUnstartedServer(nil), pulled: make(chan error, 16)}
		o := packages.Options{Dir: filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i)), Key: key,
			Base: "http://" + in.srv.Listener.Addr().String(), Apps: packages.RegistryApps(regOf(i)),
			Backoff: func(int) time.Duration { return 0 }, Tries: 2,
			Pulled: func(_ string, err error) { in.pulled <- err },
			Peers: func() []string { // the other live instances, as the election would list them
				mu.Lock()
				defer mu.Unlock()
				var out []string
				for j, other := range c.nodes {
					if j != i && up[j] {
						out = append(out, other.srv.URL)
					}
				}
				return out
			}}
		if tweak != nil {
			tweak(&o)
		}
		if in.host, err = packages.New(o); err != nil {
			t.Fatal(err)
		}
		in.srv.Config.Handler = api.New(api.Options{
			Registry: regOf(i),
			Log:      slog.New(slog.DiscardHandler),
			Apps:     api.AppOptions{Packages: in.host},
			Auth:     api.NewAuth(api.Credentials{}, clock.Real{}, nil),
		})
		in.srv.Start()
		t.Cleanup(in.srv.Close)
		t.Cleanup(in.host.Close)
		mu.Lock()
		up[i] = true
		c.nodes = append(c.nodes, in)
		mu.Unlock()
	}
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "my_app", "http://example.com/app.tgz", "bin/start.sh"
	if err := c.reg.Config().AddApp(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	return c
}

// run starts an instance's replication loop until the test ends.
func (in *instance) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { in.host.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func upload(t *testing.T, base string, content []byte) api.PackageAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, base+"/api/app/my_app/package?filename=app.tgz", bytes.NewReader(content))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans api.PackageAnswer
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || json.Unmarshal(b, &ans) != nil {
		t.Fatalf("upload = %d %s", resp.StatusCode, b)
	}
	return ans
}

func fetch(t *testing.T, url string, hdr ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func await(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatal("no pull round ended")
		return nil
	}
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// An upload to one instance reaches the other through the registry's watch
// and a pull over HTTP; with the uploader gone, the other serves it.
func TestReplicationBetweenTwoInstances(t *testing.T) {
	replicate(t, newCluster(t, 2, nil))
}

// The same with two instances on one ZooKeeper, each with its own session
// (EJ_TEST_ZK, the integration tier): the pull is driven by ZooKeeper's watch.
func TestReplicationOverZooKeeper(t *testing.T) {
	servers := testproxy.ZK(t)
	ns := fmt.Sprintf("ejtest/packages-%d", time.Now().UnixNano())
	regs := make([]*registry.Registry, 2)
	for i := range regs {
		kv, err := zkstore.Open(t.Context(), zkstore.Options{Servers: strings.Split(servers, ","), Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		regs[i] = registry.New(kv)
	}
	replicate(t, newClusterOn(t, 2, func(i int) *registry.Registry { return regs[i] }, nil))
}

func replicate(t *testing.T, c *cluster) {
	a, b := c.nodes[0], c.nodes[1]
	a.run(t)
	b.run(t)
	content := append([]byte("#!/bin/sh\n"), bytes.Repeat([]byte("package v1 "), 50_000)...)
	ans := upload(t, a.srv.URL, content)
	if !strings.HasPrefix(ans.AppURL, a.srv.URL+"/packages/") {
		t.Fatalf("appURL %s does not name the uploading instance", ans.AppURL)
	}
	if err := await(t, b.pulled); err != nil {
		t.Fatalf("instance b's pull: %v", err)
	}
	if !b.host.Store().Has(ans.SHA256) {
		t.Fatal("instance b does not hold the package after its pull")
	}
	a.srv.Close() // the uploader dies
	resolved := b.host.Resolve(ans.AppURL)
	if !strings.HasPrefix(resolved, b.srv.URL+"/packages/"+ans.SHA256+"/") {
		t.Fatalf("Resolve on b = %s", resolved)
	}
	if code, got := fetch(t, resolved); code != http.StatusOK || !bytes.Equal(got, content) {
		t.Fatalf("GET from b = %d (%d bytes)", code, len(got))
	}
}

// A request for a package an instance lacks (its loop has not pulled it
// yet) pulls it on the spot; a peer's own request never triggers a pull.
func TestServingAMissingPackagePullsItFromAPeer(t *testing.T) {
	c := newCluster(t, 2, nil)
	a, b := c.nodes[0], c.nodes[1] // no Run loops: nothing replicates on its own
	content := []byte("#!on-demand package")
	ans := upload(t, a.srv.URL, content)
	url := b.host.Resolve(ans.AppURL)
	if code, _ := fetch(t, url, packages.PeerHeader, "1"); code != http.StatusNotFound {
		t.Fatalf("peer GET of a missing package = %d, want 404", code)
	}
	if code, got := fetch(t, url); code != http.StatusOK || !bytes.Equal(got, content) {
		t.Fatalf("GET from b = %d %q", code, got)
	}
	if err := await(t, b.pulled); err != nil || !b.host.Store().Has(ans.SHA256) {
		t.Fatalf("b's pull = %v, stored %v", err, b.host.Store().Has(ans.SHA256))
	}
}

// A peer serving corrupt bytes is never stored: the pull verifies the
// sha256, retries a bounded number of times and moves to the next peer.
func TestPullVerifiesTheChecksum(t *testing.T) {
	var corruptHits atomic.Int32
	corrupt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		corruptHits.Add(1)
		io.WriteString(w, "not the package")
	}))
	t.Cleanup(corrupt.Close)
	var peers atomic.Value
	c := newCluster(t, 2, func(o *packages.Options) {
		inner := o.Peers
		o.Peers = func() []string {
			if p, ok := peers.Load().([]string); ok {
				return p
			}
			return inner()
		}
	})
	a, b := c.nodes[0], c.nodes[1]
	content := []byte("#!the real package")
	ans := upload(t, a.srv.URL, content)
	ref, _ := b.host.Links().Parse(ans.AppURL)
	peers.Store([]string{corrupt.URL})
	err := b.host.Ensure(t.Context(), ref)
	if err == nil || !strings.Contains(err.Error(), "does not match") || b.host.Store().Has(ans.SHA256) {
		t.Fatalf("pull from a corrupt peer = %v (stored %v)", err, b.host.Store().Has(ans.SHA256))
	}
	if n := corruptHits.Load(); n != 2 {
		t.Fatalf("corrupt peer asked %d times, want Tries=2", n)
	}
	<-b.pulled
	peers.Store([]string{corrupt.URL, a.srv.URL})
	if err := b.host.Ensure(t.Context(), ref); err != nil || !b.host.Store().Has(ans.SHA256) {
		t.Fatalf("pull with a good peer second = %v", err)
	}
}

// A single instance (no peers) reports why it cannot pull.
func TestPullWithoutPeers(t *testing.T) {
	c := newCluster(t, 1, func(o *packages.Options) { o.Peers = nil })
	sha := sum([]byte("never uploaded"))
	err := c.nodes[0].host.Ensure(t.Context(), packages.Ref{SHA256: sha, Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "no other scheduler instance") {
		t.Fatalf("Ensure = %v", err)
	}
}

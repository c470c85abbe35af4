package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
)

// fakeCluster is a leadership the test sets.
type fakeCluster struct {
	id      string
	leading atomic.Bool
	leader  atomic.Pointer[string]
}

func (f *fakeCluster) Leading() bool  { return f.leading.Load() }
func (f *fakeCluster) SelfID() string { return f.id }
func (f *fakeCluster) LeaderURL() (string, bool) {
	if u := f.leader.Load(); u != nil {
		return *u, true
	}
	return "", false
}

// pair is a leader and a standby sharing one store, each reading through
// its own cache, the leader served over real HTTP.
type pair struct {
	leader, standby *env
	lc, sc          *fakeCluster
	url             string       // the leader's server
	served          atomic.Int64 // requests the leader's server received
	mu              sync.Mutex
	refreshed       []string
}

func newPair(t *testing.T, creds api.Credentials, leaderOpts ...func(*api.Options)) *pair {
	t.Helper()
	return newPairWith(t, creds, nil, leaderOpts...)
}

// newPairWith is newPair with both set on both instances.
func newPairWith(t *testing.T, creds api.Credentials, both func(*api.Options), leaderOpts ...func(*api.Options)) *pair {
	t.Helper()
	back := memory.New()
	open := func() *cache.KV {
		c, err := cache.Open(t.Context(), back, cache.Options{Roots: []string{"/config", "/state", "/auth", registry.NamespacesPath}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	p := &pair{lc: &fakeCluster{id: "leader"}, sc: &fakeCluster{id: "standby"}}
	p.lc.leading.Store(true)
	lcache, scache := open(), open()
	p.leader = newEnv(t, withCreds(creds), func(o *api.Options, _ *api.Credentials) {
		o.Registry, o.Forwarding.Cluster = registry.New(lcache), p.lc
		if both != nil {
			both(o)
		}
		for _, f := range leaderOpts {
			f(o)
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.served.Add(1)
		p.leader.h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	p.sc.leader.Store(&p.url)
	p.standby = newEnv(t, withCreds(creds), func(o *api.Options, _ *api.Credentials) {
		o.Registry, o.Forwarding.Cluster = registry.New(scache), p.sc
		o.Forwarding.Refresh = func(ctx context.Context, paths []string, all bool) error {
			p.mu.Lock()
			p.refreshed = append(p.refreshed, paths...)
			p.mu.Unlock()
			return scache.Refresh(ctx, paths...)
		}
		o.Log = slog.New(slog.DiscardHandler)
		if both != nil {
			both(o)
		}
	})
	return p
}

// TestStandbyForwardsWritesAndReadsItsOwnWrite: a write sent to a standby
// is served by the leader, and the standby answers a read of it at once.
func TestStandbyForwardsWritesAndReadsItsOwnWrite(t *testing.T) {
	p := newPair(t, api.Credentials{})
	s := p.standby
	s.must(http.StatusOK, http.MethodPost, "/api/app", appBody("fwd_app"))
	if p.served.Load() != 1 {
		t.Fatalf("leader served %d requests, want the forwarded write", p.served.Load())
	}
	s.must(http.StatusOK, http.MethodGet, "/api/app/fwd_app", "") // read-your-write on the standby
	if p.served.Load() != 1 {
		t.Fatal("the standby forwarded a read")
	}
	p.mu.Lock()
	refreshed := slices.Clone(p.refreshed)
	p.mu.Unlock()
	if !slices.Contains(refreshed, registry.AppsPath+"/fwd_app") {
		t.Fatalf("standby refreshed %v, want the app's path", refreshed)
	}
	s.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("fwd_job", "fwd_app"))
	s.must(http.StatusOK, http.MethodGet, "/api/job/jobs/fwd_job", "")
	// Errors come back as the leader answered them.
	s.wantError(s.request(http.MethodPost, "/api/app", appBody("fwd_app")), http.StatusConflict, "already existed")
}

// A namespace made on the leader, and a write in it sent to a standby:
// the leader serves it, the standby reads it at once in that namespace
// (its copy refreshed at the namespace's paths), and not in another.
func TestStandbyForwardsANamespacesWrites(t *testing.T) {
	p := newPair(t, api.Credentials{})
	p.leader.must(http.StatusCreated, http.MethodPut, "/api/namespaces/pay", "")
	s := p.standby
	s.must(http.StatusOK, http.MethodPost, "/api/app?namespace=pay", appBody("fwd_app"))
	s.must(http.StatusOK, http.MethodGet, "/api/app/fwd_app?namespace=pay", "")
	s.wantError(s.request(http.MethodGet, "/api/app/fwd_app", ""), http.StatusNotFound)
	p.mu.Lock()
	refreshed := slices.Clone(p.refreshed)
	p.mu.Unlock()
	if !slices.Contains(refreshed, registry.NamespacesPath+"/pay"+registry.AppsPath+"/fwd_app") {
		t.Fatalf("standby refreshed %v, want pay's app's path", refreshed)
	}
}

func TestForwardingKeepsAuth(t *testing.T) {
	creds := api.Credentials{AdminUser: "root", AdminPassword: "pw", GuestUser: "g", GuestPassword: "gp", TokenTTL: time.Hour}
	p := newPair(t, creds)
	s := p.standby
	s.wantError(s.request(http.MethodPost, "/api/app", appBody("a")), http.StatusUnauthorized)
	s.user, s.pass = "g", "gp"
	s.wantError(s.request(http.MethodPost, "/api/app", appBody("a")), http.StatusForbidden, "read-only")
	if p.served.Load() != 0 {
		t.Fatal("a refused write reached the leader")
	}
	s.user, s.pass = "", ""
	tok := login(t, s, "root", "pw") // issued by the standby, accepted by the leader
	r := s.request(http.MethodPost, "/api/app", appBody("a"), "Authorization", "Bearer "+tok)
	if r.Code != http.StatusOK || p.served.Load() != 1 {
		t.Fatalf("forwarded token write: %d %s (leader served %d)", r.Code, r, p.served.Load())
	}
}

func TestNoLeaderAndOneHop(t *testing.T) {
	p := newPair(t, api.Credentials{})
	p.sc.leader.Store(nil)
	r := p.standby.request(http.MethodPost, "/api/app", appBody("a"))
	p.standby.wantError(r, http.StatusServiceUnavailable, "no scheduler is the leader")
	if r.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	u := "http://127.0.0.1:1" // a leader that does not answer
	p.sc.leader.Store(&u)
	p.standby.wantError(p.standby.request(http.MethodPost, "/api/app", appBody("a")), http.StatusServiceUnavailable, "did not answer")
	// The leader was replaced: the old one answers a forwarded write with
	// 503 instead of forwarding it again.
	p.lc.leading.Store(false)
	p.sc.leader.Store(&p.url)
	p.standby.wantError(p.standby.request(http.MethodPost, "/api/app", appBody("a")), http.StatusServiceUnavailable, "no longer the leader")
}

// TestStandbyListsTheLeadersConnections: the clusters' list asked of a standby is the
// leader's, with each cluster's connection; with no leader elected the standby answers
// itself, every connection absent and the reason given.
func TestStandbyListsTheLeadersConnections(t *testing.T) {
	clusters := func(o *api.Options) {
		o.Operate.Clusters = []api.ClusterConfig{{Name: "mesos-dc1", Engine: "mesos"}, {Name: "k8s-prod", Engine: "kubernetes"}}
	}
	p := newPairWith(t, api.Credentials{}, clusters, func(o *api.Options) {
		o.Operate.ClusterHealth = func() []api.ClusterHealth {
			return []api.ClusterHealth{{Name: "mesos-dc1", Connected: true}, {Name: "k8s-prod", LastError: "watch failed"}}
		}
	})
	type view struct {
		Name              string `json:"name"`
		Connected         *bool  `json:"connected"`
		LastError         string `json:"lastError"`
		ConnectionUnknown string `json:"connectionUnknown"`
	}
	var got []view
	if err := json.Unmarshal(p.standby.must(http.StatusOK, http.MethodGet, "/api/operate/clusters", "").Body, &got); err != nil {
		t.Fatal(err)
	}
	if p.served.Load() != 1 || len(got) != 2 || got[0].Connected == nil || !*got[0].Connected || got[1].Connected == nil || *got[1].Connected ||
		got[1].LastError != "watch failed" || got[0].ConnectionUnknown != "" {
		t.Fatalf("the standby's list (leader served %d): %+v", p.served.Load(), got)
	}
	p.sc.leader.Store(nil)
	got = nil
	if err := json.Unmarshal(p.standby.must(http.StatusOK, http.MethodGet, "/api/operate/clusters", "").Body, &got); err != nil {
		t.Fatal(err)
	}
	if p.served.Load() != 1 || len(got) != 2 || got[0].Connected != nil || !strings.Contains(got[1].ConnectionUnknown, "known only to the leader, and no scheduler leads now") {
		t.Fatalf("with no leader: %+v", got)
	}
}

package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// withReplicated serves /api/operate/store/… from a real one-member
// embedded etcd cluster; it returns the store for raw writes.
func withReplicated(t *testing.T, s **etcd.Store) envOpt { return withReplicatedN(t, 1, s) }

// withReplicatedN is withReplicated on n members.
func withReplicatedN(t *testing.T, n int, s **etcd.Store) envOpt {
	c := etcdtest.Start(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := etcd.Open(ctx, etcd.Options{Endpoints: c.Endpoints(), Prefix: "/api-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	*s = st
	return func(o *api.Options, _ *api.Credentials) { o.Operate.Replicated = etcd.NewAdmin(st, "/ha/election") }
}

func TestReplicatedStoreRoutes(t *testing.T) {
	var st *etcd.Store
	e := newEnv(t, withCreds(testCreds), withReplicated(t, &st))
	e.user, e.pass = "guest", "peek"
	e.wantError(e.request(http.MethodGet, "/api/operate/store/members", ""), http.StatusForbidden, "admin")
	e.user, e.pass = "root", "s3cret"

	ms := decode[[]etcd.MemberStatus](t, e.must(http.StatusOK, http.MethodGet, "/api/operate/store/members", ""))
	if len(ms) != 1 || !ms[0].Healthy || !ms[0].Leader || ms[0].RaftIndex == 0 {
		t.Fatalf("members = %+v, want one healthy leader", ms)
	}
	e.wantError(e.request(http.MethodDelete, "/api/operate/store/members/nope", ""), http.StatusNotFound, "no such member")
	e.wantError(e.request(http.MethodDelete, "/api/operate/store/members/m0", ""), http.StatusConflict, "only member")
	e.wantError(e.request(http.MethodPost, "/api/operate/store/members", `{"name":"m0","peerURL":"http://127.0.0.1:1"}`), http.StatusConflict, "remove it first")
	e.wantError(e.request(http.MethodPost, "/api/operate/store/members", `{"name":"x","peerURL":"127.0.0.1:1"}`), http.StatusBadRequest, "http(s) peer URL")
	e.wantError(e.request(http.MethodPost, "/api/operate/store/members", `{"name":""}`), http.StatusBadRequest, "required")

	ctx := t.Context()
	if err := st.Commit(ctx, store.Put("/config/job/a", []byte("A"))); err != nil {
		t.Fatal(err)
	}
	backup := e.must(http.StatusOK, http.MethodGet, "/api/operate/store/backup", "")
	if ct := backup.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("backup Content-Type %q", ct)
	}
	if err := st.Commit(ctx, store.Set("/config/job/a", []byte("changed"), store.AnyVersion), store.Put("/config/job/b", nil)); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.request(http.MethodPost, "/api/operate/store/restore", "not a backup", "Content-Type", "application/octet-stream"),
		http.StatusBadRequest, "not a whole registry backup")
	r := e.request(http.MethodPost, "/api/operate/store/restore", string(backup.Body), "Content-Type", "application/octet-stream")
	if r.Code != http.StatusOK {
		t.Fatalf("restore: %d %s", r.Code, r.Body)
	}
	var res etcd.BackupResult
	if err := json.Unmarshal(r.Body, &res); err != nil || res.Deleted != 1 {
		t.Fatalf("restore answered %s (%v), want one node deleted", r.Body, err)
	}
	if n, err := st.Get(ctx, "/config/job/a"); err != nil || string(n.Value) != "A" {
		t.Fatalf("after restore /config/job/a = %+v, %v", n, err)
	}
}

func TestReplicatedStoreAbsent(t *testing.T) {
	e := newEnv(t)
	r := e.request(http.MethodGet, "/api/operate/store/members", "")
	e.wantError(r, http.StatusNotFound, "not replicated")
	if !strings.Contains(r.message(t), "registry=etcd") {
		t.Errorf("message %q does not say how to replicate", r.message(t))
	}
}

// unfinishedRemoval is a replicated store whose member removal was not
// applied within its bound.
type unfinishedRemoval struct{ api.ReplicatedStore }

func (unfinishedRemoval) RemoveMember(context.Context, string) error {
	return fmt.Errorf("etcd cluster: remove m2: %w: not applied within 20s", etcd.ErrChangeUnfinished)
}

// TestReplicatedStoreRemovalUnfinished: a removal the store did not apply
// within its bound is a 503 with Retry-After that says to retry, not a 500.
func TestReplicatedStoreRemovalUnfinished(t *testing.T) {
	e := newEnv(t, withCreds(testCreds), func(o *api.Options, _ *api.Credentials) { o.Operate.Replicated = unfinishedRemoval{} })
	e.user, e.pass = "root", "s3cret"
	r := e.request(http.MethodDelete, "/api/operate/store/members/m2", "")
	e.wantError(r, http.StatusServiceUnavailable, "did not finish; retry")
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("a 503 without Retry-After")
	}
}

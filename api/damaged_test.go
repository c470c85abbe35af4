package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
)

// A value the registry cannot decode (the original's YAML, a hand edit,
// half a write) is set aside: the lists answer everything else, the entry
// is listed with its path and error, and the admin removes or repairs it.
func TestDamagedEntriesSetAsideAndRepaired(t *testing.T) {
	t.Run("memory", func(t *testing.T) { damagedEntriesSetAsideAndRepaired(t, newEnv(t)) })
	t.Run("zookeeper", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kv, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(testproxy.ZK(t), ","),
			Namespace: fmt.Sprintf("ejtest/api-damaged-%d", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		e := newEnv(t)
		clk, reg, ops := clock.NewFake(t0), registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)}), &fakeOps{}
		o := api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Live: api.Live{Ops: ops, Engine: ops}}
		o.Auth = api.NewAuth(api.Credentials{}, clk, reg.Tenancy())
		e.h, e.reg, e.kv, e.clock, e.ops = api.New(o), reg, kv, clk, ops
		damagedEntriesSetAsideAndRepaired(t, e)
	})
}

func damagedEntriesSetAsideAndRepaired(t *testing.T, e *env) {
	ctx := context.Background()
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("good_app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("good_job", "good_app"))
	for p, v := range map[string]string{
		"/config/app/legacy_app":  `{"appName":"legacy_app","appURL":"http://h/a.t`,
		"/config/job/legacy_job":  `{"jobName":"legacy_job","jobClass":"com.x.Job","cron":`,
		"/state/ready/legacy_job": "{\"count\":",
	} {
		if err := e.kv.Commit(ctx, store.Put(p, []byte(v))); err != nil {
			t.Fatal(err)
		}
	}

	apps := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/app/list", ""))
	if len(apps) != 1 || apps[0]["appName"] != "good_app" {
		t.Errorf("app list = %v, want good_app alone", apps)
	}
	js := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/jobs", ""))
	if len(js) != 1 || js[0]["jobName"] != "good_job" {
		t.Errorf("job list = %v, want good_job alone", js)
	}
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "good_job")
	e.wantError(e.request(http.MethodGet, "/api/app/legacy_app", ""), http.StatusInternalServerError, "/config/app/legacy_app")

	var listed []registry.Damaged
	if err := json.Unmarshal(e.must(http.StatusOK, http.MethodGet, "/api/registry/damaged?scan=true", "").Body, &listed); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range listed {
		paths = append(paths, d.Path)
		if d.Error == "" || d.Namespace != "default" {
			t.Errorf("%+v: want its error and namespace default", d)
		}
	}
	if want := []string{"/config/app/legacy_app", "/config/job/legacy_job", "/state/ready/legacy_job"}; !slices.Equal(paths, want) {
		t.Errorf("damaged = %v, want %v", paths, want)
	}

	// a replacement must decode and be valid as the API would take it
	e.wantError(e.request(http.MethodPut, "/api/registry/damaged?path=/config/app/legacy_app", `{"appName":"legacy_app",`), http.StatusBadRequest, "does not decode")
	e.wantError(e.request(http.MethodPut, "/api/registry/damaged?path=/config/app/legacy_app", appBody("other")), http.StatusBadRequest, "not the name its path gives")
	e.wantError(e.request(http.MethodPut, "/api/registry/damaged?path=/config/app/legacy_app",
		`{"appName":"legacy_app","appURL":"http://h/a.tgz","bootstrapScript":"bin/start.sh","cpuCount":0,"memoryMB":128}`), http.StatusBadRequest, "cpuCount")
	e.must(http.StatusNoContent, http.MethodPut, "/api/registry/damaged?path=/config/app/legacy_app",
		`{"appName":"legacy_app","appURL":"http://h/a.tgz","bootstrapScript":"bin/start.sh","cpuCount":1,"memoryMB":128}`)
	e.must(http.StatusOK, http.MethodGet, "/api/app/legacy_app", "")
	// only a damaged entry is changed this way
	e.wantError(e.request(http.MethodDelete, "/api/registry/damaged?path=/config/app/legacy_app", ""), http.StatusConflict, "decodes")
	e.wantError(e.request(http.MethodDelete, "/api/registry/damaged?path=/config/app/nothing", ""), http.StatusConflict, "nothing is stored")
	e.wantError(e.request(http.MethodDelete, "/api/registry/damaged", ""), http.StatusBadRequest, "path")
	e.must(http.StatusNoContent, http.MethodDelete, "/api/registry/damaged?path=/config/job/legacy_job", "")
	e.must(http.StatusNoContent, http.MethodDelete, "/api/registry/damaged?path=/state/ready/legacy_job", "")

	// a damaged job or app is also deleted by its own API
	for _, p := range []string{"/config/job/old_job", "/config/app/old_app"} {
		if err := e.kv.Commit(ctx, store.Put(p, []byte(`{"jobName":"old","cr`))); err != nil {
			t.Fatal(err)
		}
	}
	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/old_job/deregister", "")
	e.must(http.StatusNoContent, http.MethodDelete, "/api/app/old_app", "")

	left := decode[[]registry.Damaged](t, e.must(http.StatusOK, http.MethodGet, "/api/registry/damaged?scan=true", ""))
	if len(left) != 0 {
		t.Errorf("after the repair and removals, damaged = %v", left)
	}
	apps = decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/app/list", ""))
	if len(apps) != 2 {
		t.Errorf("app list = %v, want good_app and the repaired legacy_app", apps)
	}
}

// Each caller sees the damaged entries of its own namespaces; only the
// admin sees the scheduler's own and repairs.
func TestDamagedEntriesByNamespace(t *testing.T) {
	tn := twoTeamsAPI(t)
	ctx := context.Background()
	for _, p := range []string{"/namespaces/pay/config/app/legacy", "/namespaces/search/config/job/legacy", "/auth/tokens/bad"} {
		if err := tn.kv.Commit(ctx, store.Put(p, []byte(`{"appName":"legacy","ap`))); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(user, pass string) []string {
		w := tn.call(http.MethodGet, "/api/registry/damaged?scan=true", "", user, pass)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", user, w.Code, w.Body)
		}
		var ds []registry.Damaged
		if err := json.Unmarshal(w.Body.Bytes(), &ds); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			out = append(out, d.Path)
		}
		return out
	}
	if got := seen("root", "s3cret"); len(got) != 3 {
		t.Errorf("admin sees %v, want all 3", got)
	}
	if got := seen("alice", "secret"); !slices.Equal(got, []string{"/namespaces/pay/config/app/legacy"}) {
		t.Errorf("alice (pay) sees %v", got)
	}
	if got := seen("bob", "hunter2"); !slices.Equal(got, []string{"/namespaces/search/config/job/legacy"}) {
		t.Errorf("bob (search) sees %v", got)
	}
	if w := tn.call(http.MethodDelete, "/api/registry/damaged?path=/namespaces/pay/config/app/legacy", "", "alice", "secret"); w.Code != http.StatusForbidden {
		t.Errorf("alice's DELETE: %d, want 403", w.Code)
	}
	if w := tn.call(http.MethodDelete, "/api/registry/damaged?path=/namespaces/pay/config/app/legacy", "", "root", "s3cret"); w.Code != http.StatusNoContent {
		t.Errorf("admin's DELETE: %d %s", w.Code, w.Body)
	}
	if w := tn.call(http.MethodGet, "/api/app/list?namespace=pay", "", "alice", "secret"); w.Code != http.StatusOK {
		t.Errorf("pay's app list: %d %s", w.Code, w.Body)
	}
}

package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
)

func withClusters(cs ...api.ClusterConfig) envOpt {
	return func(o *api.Options, _ *api.Credentials) { o.Operate.Clusters = cs }
}

type clusterState struct {
	Name    string `json:"name"`
	Drained *struct {
		By string `json:"by"`
	} `json:"drained"`
	Agents       int     `json:"agents"`
	CPUCount     float64 `json:"cpuCount"`
	RunningTasks int     `json:"runningTasks"`
}

// TestClustersDrain: GET /api/operate/clusters shows each cluster's agents and running
// work (an agent id naming no cluster is the home cluster's); a drain is recorded in the
// registry, answered with the work left there, and undone; a cluster not configured is a
// 404; only an admin drains.
func TestClustersDrain(t *testing.T) {
	e := newEnv(t, withCreds(testCreds), withClusters(api.ClusterConfig{Name: "mesos-dc1", Engine: "mesos"}, api.ClusterConfig{Name: "k8s-prod", Engine: "kubernetes"}))
	e.ops.agents = []engine.Agent{{ID: "9d1-S0", CPUs: 8, MemMB: 8192}, {ID: "k8s-prod:node-1", CPUs: 4, MemMB: 4096}, {ID: "k8s-prod:node-2", CPUs: 4, MemMB: 4096}}
	e.user, e.pass = testCreds.AdminUser, testCreds.AdminPassword
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	b, _ := json.Marshal(task.Entry{TaskID: "t0", AgentID: "k8s-prod:node-1", State: task.Running})
	if err := e.kv.Commit(t.Context(), store.Put(registry.RunningPath+"/job/"+jobs.MetaKey("job", 0), b)); err != nil {
		t.Fatal(err)
	}
	var got []clusterState
	if err := json.Unmarshal(e.must(http.StatusOK, http.MethodGet, "/api/operate/clusters", "").Body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Agents != 1 || got[0].CPUCount != 8 || got[0].RunningTasks != 0 || got[1].Agents != 2 || got[1].RunningTasks != 1 || got[1].Drained != nil {
		t.Fatalf("clusters: %+v", got)
	}

	var one clusterState
	if err := json.Unmarshal(e.must(http.StatusOK, http.MethodPut, "/api/operate/clusters/k8s-prod/drain", "").Body, &one); err != nil {
		t.Fatal(err)
	}
	if one.Drained == nil || one.RunningTasks != 1 {
		t.Fatalf("drained: %+v", one)
	}
	if d, err := e.reg.Clusters().Drained(t.Context()); err != nil || d["k8s-prod"].Since.IsZero() {
		t.Fatalf("the registry's drains: %v %v", d, err)
	}
	e.wantError(e.request(http.MethodPut, "/api/operate/clusters/k8s-prd/drain", ""), http.StatusNotFound, "not configured")
	e.must(http.StatusOK, http.MethodDelete, "/api/operate/clusters/k8s-prod/drain", "")
	if d, _ := e.reg.Clusters().Drained(t.Context()); len(d) != 0 {
		t.Fatalf("after undrain: %v", d)
	}
	e.user, e.pass = testCreds.GuestUser, testCreds.GuestPassword
	e.wantError(e.request(http.MethodPut, "/api/operate/clusters/k8s-prod/drain", ""), http.StatusForbidden)
}

// TestClustersHealth: each cluster's connection comes from Options.Operate.ClusterHealth
// (the leader's engine); with none (a standby, no term running) the fields are absent
// rather than a claim that the cluster is down.
func TestClustersHealth(t *testing.T) {
	since := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	var health []api.ClusterHealth
	e := newEnv(t, withClusters(api.ClusterConfig{Name: "mesos-dc1", Engine: "mesos"}, api.ClusterConfig{Name: "k8s-prod", Engine: "kubernetes"}),
		func(o *api.Options, _ *api.Credentials) {
			o.Operate.ClusterHealth = func() []api.ClusterHealth { return health }
		})
	list := func() []map[string]any {
		var got []map[string]any
		if err := json.Unmarshal(e.must(http.StatusOK, http.MethodGet, "/api/operate/clusters", "").Body, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range list() {
		for _, k := range []string{"connected", "since", "lastError"} {
			if _, ok := c[k]; ok {
				t.Fatalf("not leading, yet %s is shown: %v", k, c)
			}
		}
	}
	health = []api.ClusterHealth{{Name: "mesos-dc1", Connected: true, Since: since},
		{Name: "k8s-prod", Connected: false, Since: since.Add(time.Minute), LastError: "dial tcp: connection refused"}}
	got := list()
	if got[0]["connected"] != true || got[0]["since"] != "2026-11-28T06:00:00Z" || got[0]["lastError"] != nil {
		t.Fatalf("connected cluster: %v", got[0])
	}
	if got[1]["connected"] != false || got[1]["since"] != "2026-11-28T06:01:00Z" || got[1]["lastError"] != "dial tcp: connection refused" {
		t.Fatalf("lost cluster: %v", got[1])
	}
}

// TestNamespacePerCluster: a namespace's guarantee and limit per cluster are stored and
// shown; a cluster not configured, a per-cluster guarantee above its limit or above the
// namespace's limit, and an entry setting nothing are refused, each naming the field; a
// scheduler on one cluster refuses them all.
func TestNamespacePerCluster(t *testing.T) {
	e := newEnv(t, withCreds(testCreds), withClusters(api.ClusterConfig{Name: "mesos-dc1", Engine: "mesos"}, api.ClusterConfig{Name: "k8s-prod", Engine: "kubernetes"}))
	e.user, e.pass = testCreds.AdminUser, testCreds.AdminPassword
	body := `{"limit": {"cpuCount": 8, "memoryMB": 8192}, "perCluster": {"k8s-prod": {"guarantee": {"cpuCount": 2, "memoryMB": 1024}, "limit": {"cpuCount": 4, "memoryMB": 4096}}}}`
	var got struct {
		PerCluster map[string]struct {
			Guarantee struct{ CPUCount float64 } `json:"guarantee"`
			Limit     struct{ CPUCount float64 } `json:"limit"`
		} `json:"perCluster"`
	}
	if err := json.Unmarshal(e.must(http.StatusCreated, http.MethodPut, "/api/namespaces/pay", body).Body, &got); err != nil {
		t.Fatal(err)
	}
	if pc := got.PerCluster["k8s-prod"]; pc.Guarantee.CPUCount != 2 || pc.Limit.CPUCount != 4 {
		t.Fatalf("answer: %+v", got)
	}
	if err := json.Unmarshal(e.must(http.StatusOK, http.MethodGet, "/api/namespaces/pay", "").Body, &got); err != nil || got.PerCluster["k8s-prod"].Limit.CPUCount != 4 {
		t.Fatalf("read back: %+v %v", got, err)
	}
	// the console's namespace page reads them from the usage answer
	got.PerCluster = nil
	if err := json.Unmarshal(e.must(http.StatusOK, http.MethodGet, "/api/namespaces/pay/usage", "").Body, &got); err != nil ||
		got.PerCluster["k8s-prod"].Guarantee.CPUCount != 2 || got.PerCluster["k8s-prod"].Limit.CPUCount != 4 {
		t.Fatalf("usage: %+v %v", got, err)
	}
	for _, c := range []struct{ body, want string }{
		{`{"perCluster": {"k8s-prd": {"limit": {"cpuCount": 1, "memoryMB": 1}}}}`, `cluster "k8s-prd", which is not configured (the clusters: mesos-dc1, k8s-prod)`},
		{`{"perCluster": {"K8S": {"limit": {"cpuCount": 1, "memoryMB": 1}}}}`, `perCluster "K8S" is not a cluster name`},
		{`{"perCluster": {"k8s-prod": {}}}`, "perCluster.k8s-prod sets neither a guarantee nor a limit"},
		{`{"perCluster": {"k8s-prod": {"guarantee": {"cpuCount": 2, "memoryMB": 1}, "limit": {"cpuCount": 1, "memoryMB": 1}}}}`,
			"perCluster.k8s-prod.guarantee.cpuCount 2 is above perCluster.k8s-prod.limit.cpuCount 1"},
		{`{"limit": {"cpuCount": 1, "memoryMB": 100}, "perCluster": {"k8s-prod": {"guarantee": {"cpuCount": 2, "memoryMB": 1}}}}`,
			"perCluster.k8s-prod.guarantee (2 CPUs, 1 MB) is above the namespace's limit"},
		{`{"perCluster": {"k8s-prod": {"limit": {"cpuCount": -1, "memoryMB": 1}}}}`, "perCluster.k8s-prod.limit.cpuCount must be a number of at least 0"},
	} {
		e.wantError(e.request(http.MethodPut, "/api/namespaces/pay", c.body), http.StatusBadRequest, c.want)
	}

	one := newEnv(t, withCreds(testCreds), withClusters(api.ClusterConfig{Name: "default", Engine: "embedded"}))
	one.user, one.pass = testCreds.AdminUser, testCreds.AdminPassword
	one.wantError(one.request(http.MethodPut, "/api/namespaces/pay", `{"perCluster": {"default": {"limit": {"cpuCount": 1, "memoryMB": 1}}}}`),
		http.StatusBadRequest, "perCluster needs several clusters")
}

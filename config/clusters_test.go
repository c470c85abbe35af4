package config

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func loadClusters(t *testing.T, yaml string, env map[string]string) (Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clusters.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"clusters_file": p}
	for k, v := range env {
		e[k] = v
	}
	return Load(nil, envOf(e), io.Discard)
}

// TestClustersFile: the list is read as written, the home cluster first.
func TestClustersFile(t *testing.T) {
	c, err := loadClusters(t, `clusters:
  - name: mesos-dc1
    engine: mesos
    mesos_url: zk://zk1:2181,zk2:2181/mesos
    mesos_principal: ej
    mesos_secret_file: /etc/ej/mesos-secret
  - name: k8s-prod
    engine: kubernetes
    kube_config: /etc/ej/k8s-prod.kubeconfig
    kube_namespace: batch
  - name: local
    engine: embedded
    lost_after: 2m
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ClusterLostAfter(); !reflect.DeepEqual(got, map[string]time.Duration{"local": 2 * time.Minute}) {
		t.Errorf("lost_after: %v", got)
	}
	if got := c.ClusterNames(); !reflect.DeepEqual(got, []string{"mesos-dc1", "k8s-prod", "local"}) {
		t.Errorf("names %v", got)
	}
	if k := c.ClusterList()[1]; k.Engine != EngineKubernetes || k.KubeConfig != "/etc/ej/k8s-prod.kubeconfig" || k.KubeNamespace != "batch" {
		t.Errorf("k8s-prod: %+v", k)
	}
	if r := c.Redacted()["clusters"]; r != "mesos-dc1=mesos,k8s-prod=kubernetes,local=embedded" {
		t.Errorf("redacted: %v", r)
	}
}

// TestSingleEngineIsOneDefaultCluster: without clusters_file every existing deployment is
// one cluster named default, of the engine its settings select.
func TestSingleEngineIsOneDefaultCluster(t *testing.T) {
	kubeconfig := writeFile(t, "apiVersion: v1\nkind: Config\n")
	for _, c := range []struct {
		env  map[string]string
		want Cluster
	}{
		{nil, Cluster{Name: "default", Engine: EngineEmbedded}},
		{map[string]string{"mesos_url": "http://m:5050"}, Cluster{Name: "default", Engine: EngineMesos, MesosURL: "http://m:5050", MesosRole: "*"}},
		{map[string]string{"kube_config": kubeconfig}, Cluster{Name: "default", Engine: EngineKubernetes, KubeConfig: kubeconfig, KubeNamespace: "default"}},
	} {
		cfg, err := Load(nil, envOf(c.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.ClusterList(); !reflect.DeepEqual(got, []Cluster{c.want}) {
			t.Errorf("%v: %+v, want %+v", c.env, got, c.want)
		}
	}
}

// TestClustersFileRefused: every bad list is refused at start, with the cluster and the
// fault named.
func TestClustersFileRefused(t *testing.T) {
	for _, c := range []struct {
		yaml string
		env  map[string]string
		want string
	}{
		{"clusters: []\n", nil, "no cluster listed"},
		{"clusters:\n  - name: a\n    engine: embedded\n    colour: red\n", nil, "colour"},
		{"clusters:\n  - name: Bad_Name\n    engine: embedded\n", nil, `name "Bad_Name" is not a cluster name`},
		{"clusters:\n  - name: a\n    engine: embedded\n  - name: a\n    engine: mesos\n    mesos_url: http://m:5050\n", nil, "cluster 2 (a): name listed twice"},
		{"clusters:\n  - name: a\n    engine: nomad\n", nil, `engine "nomad": want embedded, mesos or kubernetes`},
		{"clusters:\n  - name: a\n    engine: mesos\n", nil, "needs mesos_url"},
		{"clusters:\n  - name: a\n    engine: mesos\n    mesos_url: ftp://m\n", nil, "mesos_url:"},
		{"clusters:\n  - name: a\n    engine: kubernetes\n", nil, "needs kube_config or kube_in_cluster"},
		{"clusters:\n  - name: a\n    engine: kubernetes\n    kube_config: /k\n    kube_in_cluster: true\n", nil, "needs kube_config or kube_in_cluster"},
		{"clusters:\n  - name: a\n    engine: kubernetes\n    kube_config: /k\n    mesos_url: http://m:5050\n", nil, "takes no mesos_* setting"},
		{"clusters:\n  - name: a\n    engine: embedded\n  - name: b\n    engine: embedded\n", nil, "2 embedded clusters"},
		{"clusters:\n  - name: a\n    engine: embedded\n    lost_after: soon\n", nil, `cluster 1 (a): lost_after "soon" must be a duration above 0s and at most 168h0m0s`},
		{"clusters:\n  - name: a\n    engine: embedded\n    lost_after: 0s\n", nil, `lost_after "0s" must be a duration above 0s`},
		{"clusters:\n  - name: a\n    engine: embedded\n    lost_after: 200h\n", nil, `lost_after "200h" must be a duration`},
		{"clusters:\n  - name: a\n    engine: embedded\n", map[string]string{"mesos_url": "http://m:5050"}, "give each cluster's engine in clusters_file's list only"},
	} {
		_, err := loadClusters(t, c.yaml, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.yaml, err, c.want)
		}
	}
}

// TestOneClusterRunsAsTheSingleEngine: a list of one cluster is the single-engine settings
// it stands for (its Mesos secret read from its file), under its own name.
func TestOneClusterRunsAsTheSingleEngine(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadClusters(t, "clusters:\n  - name: dc1\n    engine: mesos\n    mesos_url: http://m:5050\n    mesos_principal: ej\n    mesos_secret_file: "+secret+"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.MesosURL != "http://m:5050" || c.Mesos.Principal != "ej" || c.Mesos.Secret != "s3cret" || c.ClusterNames()[0] != "dc1" {
		t.Errorf("mesos_url %q principal %q secret %q names %v", c.MesosURL, c.Mesos.Principal, c.Mesos.Secret, c.ClusterNames())
	}
	if r := c.Redacted(); r["mesos_secret"] != "***" {
		t.Errorf("the secret is readable back: %v", r["mesos_secret"])
	}
}

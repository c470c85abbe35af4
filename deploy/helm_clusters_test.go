package deploy_test

import (
	"os"
	"path/filepath"
	"testing"
)

// The chart's clusters list becomes the scheduler's clusters_file: a ConfigMap mounted with
// the clusters' Secret, and the scheduler loads it (one replica and three alike).
func TestHelmChartClusters(t *testing.T) {
	list := []any{
		map[string]any{"name": "k8s-here", "engine": "kubernetes", "kube_in_cluster": true},
		map[string]any{"name": "mesos-dc1", "engine": "mesos", "mesos_url": "zk://zk-1:2181,zk-2:2181/mesos"},
	}
	for _, replicas := range []int{1, 3} {
		objs, maps, err := render(t, map[string]any{"replicas": replicas, "clusters": list, "clusterSecret": "ej-clusters"})
		if err != nil {
			t.Fatalf("replicas %d: %v", replicas, err)
		}
		env, _, _ := schedulerEnv(t, objs)
		if _, ok := env["ELASTICJOB_KUBE_IN_CLUSTER"]; ok || env["ELASTICJOB_CLUSTERS_FILE"] != "/etc/elasticjob/clusters/clusters.yaml" {
			t.Errorf("replicas %d: env %v: want clusters_file and no kube_in_cluster", replicas, env)
		}
		cm, ok := maps["ConfigMap/elasticjob-clusters"]
		if !ok {
			t.Fatalf("replicas %d: no ConfigMap elasticjob-clusters", replicas)
		}
		data, _ := cm["data"].(map[string]any)
		p := filepath.Join(t.TempDir(), "clusters.yaml")
		if err := os.WriteFile(p, []byte(data["clusters.yaml"].(string)), 0o600); err != nil {
			t.Fatal(err)
		}
		env["ELASTICJOB_CLUSTERS_FILE"], env["ELASTICJOB_AUTH_PASSWORD"] = p, "made-at-start"
		c := loads(t, "helm clusters", env)
		if got := c.ClusterNames(); len(got) != 2 || got[0] != "k8s-here" || got[1] != "mesos-dc1" {
			t.Errorf("replicas %d: clusters %v", replicas, got)
		}
		kind := "Deployment/elasticjob-scheduler"
		if replicas > 1 {
			kind = "StatefulSet/elasticjob-scheduler"
		}
		if !mounts(maps[kind], "clusters", "ej-clusters") {
			t.Errorf("replicas %d: the clusters volume (ConfigMap and Secret ej-clusters) is not mounted", replicas)
		}
	}
	// Without a list, nothing changes: TestHelmChartIsTheKustomizeBase.
}

// mounts reports whether the pod template of a workload has volume name, projecting a
// Secret secret, mounted in its container.
func mounts(w map[string]any, name, secret string) bool {
	spec := dig(w, "spec", "template", "spec")
	found := false
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		vm, _ := v.(map[string]any)
		if vm["name"] != name {
			continue
		}
		srcs, _ := dig(vm, "projected")["sources"].([]any)
		for _, s := range srcs {
			if sm, _ := s.(map[string]any); dig(sm, "secret")["name"] == secret {
				found = true
			}
		}
	}
	cs, _ := spec["containers"].([]any)
	c0, _ := cs[0].(map[string]any)
	vms, _ := c0["volumeMounts"].([]any)
	for _, m := range vms {
		if mm, _ := m.(map[string]any); mm["name"] == name {
			return found
		}
	}
	return false
}

func dig(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m, _ = m[p].(map[string]any)
	}
	return m
}

package config

import (
	"strings"
	"testing"
)

// mesosSettings are the settings but the kube_* ones, which select the other engine and are
// refused together with mesos_url (TestEveryKeyFromEveryLayer sets every key at once).
func mesosSettings() []setting {
	var out []setting
	for _, s := range settings {
		// the kube_* keys select another engine, registry and etcd_* another registry:
		// registry_test.go; clusters_file lists engines instead of mesos_url: clusters_test.go
		if !strings.HasPrefix(s.key, "kube_") && !strings.HasPrefix(s.key, "etcd_") && s.key != "registry" && s.key != "clusters_file" {
			out = append(out, s)
		}
	}
	return out
}

func TestKubeEveryKeyFromEveryLayer(t *testing.T) {
	kubeconfig := writeFile(t, "apiVersion: v1\nkind: Config\n")
	sample := map[string]string{
		"kube_config": kubeconfig, "kube_namespace": "jobs", "kube_executor_image": "registry.example/ej/executor:1.2",
		"kube_image_pull_policy": "Never", "kube_host_network": "true", "kube_node_selector": "pool=batch,example.com/zone=a",
		"kube_tolerations": "dedicated=batch:NoSchedule,gpu", "kube_service_account": "ej-task",
		"kube_scheduler_url": "http://ej.jobs.svc:8899,http://ej-2.jobs.svc:8899", "kube_api_qps": "200", "kube_api_burst": "400",
	}
	defaults := load(t, nil, nil)
	var file strings.Builder
	env, prefixed := map[string]string{}, map[string]string{}
	var args []string
	for k, v := range sample {
		file.WriteString(k + "=" + v + "\n")
		env[k] = v
		prefixed["ELASTICJOB_"+strings.ToUpper(k)] = v
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+v)
	}
	fromFile := load(t, []string{"--config", writeFile(t, file.String())}, nil)
	fromFile.ConfigFile = ""
	for name, c := range map[string]Config{"env": load(t, nil, env), "prefixed env": load(t, nil, prefixed), "flags": load(t, args, nil)} {
		if !same(c, fromFile) {
			t.Errorf("%s layer:\n got %+v\nwant %+v", name, c.Kube, fromFile.Kube)
		}
	}
	k := fromFile.Kube
	if !fromFile.KubeEnabled() || k.Namespace != "jobs" || !k.HostNetwork || k.ImagePullPolicy != "Never" || k.APIQPS != 200 || k.APIBurst != 400 {
		t.Errorf("kube settings: %+v", k)
	}
	if m := k.NodeSelectorMap(); len(m) != 2 || m["pool"] != "batch" || m["example.com/zone"] != "a" {
		t.Errorf("node selector %v", m)
	}
	if tl := k.TolerationList(); len(tl) != 2 || tl[0] != (Toleration{"dedicated", "batch", "NoSchedule"}) || tl[1] != (Toleration{Key: "gpu"}) {
		t.Errorf("tolerations %+v", tl)
	}
	if us := fromFile.KubeSchedulerURLs(); len(us) != 2 || us[1] != "http://ej-2.jobs.svc:8899" {
		t.Errorf("scheduler URLs %v", us)
	}
	if us := defaults.KubeSchedulerURLs(); len(us) != 1 || us[0] != "http://127.0.0.1:8899" {
		t.Errorf("default scheduler URL %v (want the advertised one)", us)
	}
	if defaults.KubeEnabled() || defaults.Kube.Namespace != "default" || defaults.Kube.HostNetwork || defaults.Kube.APIQPS != 50 || defaults.Kube.APIBurst != 100 {
		t.Errorf("defaults %+v", defaults.Kube)
	}
	in := load(t, nil, map[string]string{"kube_in_cluster": "true", "zk_servers": "z:2181"})
	if !in.KubeEnabled() {
		t.Error("kube_in_cluster does not select Kubernetes")
	}
}

func TestKubeErrors(t *testing.T) {
	kubeconfig := writeFile(t, "apiVersion: v1\n")
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"kube_config": kubeconfig, "mesos_url": "http://m:5050"}, "choose one cluster engine"},
		{map[string]string{"kube_config": kubeconfig, "kube_in_cluster": "true"}, "set one"},
		{map[string]string{"kube_config": "/nonexistent/kubeconfig"}, "kube_config"},
		{map[string]string{"kube_config": kubeconfig, "kube_namespace": "Jobs"}, "not a namespace name"},
		{map[string]string{"kube_config": kubeconfig, "kube_image_pull_policy": "Sometimes"}, "Always, IfNotPresent or Never"},
		{map[string]string{"kube_node_selector": "pool"}, "kube_node_selector"},
		{map[string]string{"kube_tolerations": "a=b:Sometimes"}, "NoSchedule, PreferNoSchedule or NoExecute"},
		{map[string]string{"kube_config": kubeconfig, "kube_scheduler_url": "ftp://x"}, "kube_scheduler_url"},
		{map[string]string{"kube_config": kubeconfig, "kube_api_qps": "0"}, "want qps > 0"},
		{map[string]string{"kube_config": kubeconfig, "kube_api_qps": "200", "kube_api_burst": "100"}, "burst >= qps"},
		{map[string]string{"kube_config": kubeconfig, "kube_api_qps": "many"}, "kube_api_qps"},
		{map[string]string{"zk_servers": "z:2181"}, "set mesos_url too"},
	} {
		_, err := Load(nil, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.env, err, tc.want)
		}
	}
}

func TestKubeNamespaceMapping(t *testing.T) {
	k := Kube{Namespace: "jobs"}
	for ns, want := range map[string]string{"default": "jobs", "": "jobs", "pay": "pay"} {
		if got, err := k.KubeNamespaceOf(ns); err != nil || got != want {
			t.Errorf("no map: %q → %q, %v; want %q", ns, got, err, want)
		}
	}
	k = Kube{Namespace: "jobs", NamespacePrefix: "ej-", Namespaces: "pay=payments-batch, *=shared"}
	for ns, want := range map[string]string{"default": "jobs", "pay": "payments-batch", "search": "shared"} {
		if got, err := k.KubeNamespaceOf(ns); err != nil || got != want {
			t.Errorf("map: %q → %q, %v; want %q", ns, got, err, want)
		}
	}
	k = Kube{Namespace: "jobs", NamespacePrefix: "ej-", Namespaces: "pay=payments-batch"}
	if got, _ := k.KubeNamespaceOf("search"); got != "ej-search" {
		t.Errorf("prefix: search → %q", got)
	}
	if _, err := k.KubeNamespaceOf(strings.Repeat("a", 62)); err == nil || !strings.Contains(err.Error(), "kube_namespaces") {
		t.Errorf("a prefixed name over 63 characters: %v", err)
	}
	if got := k.KubeNamespacesKnown(); len(got) != 2 || got[0] != "jobs" || got[1] != "payments-batch" {
		t.Errorf("known %v", got)
	}
	for _, bad := range []string{"pay", "default=x", "pay=Pay", "pay=a,pay=b", "Pay=x"} {
		if _, err := parseNamespaceMap(bad); err == nil {
			t.Errorf("kube_namespaces %q accepted", bad)
		}
	}
	c := load(t, []string{"--kube-namespaces", "pay=x,*=y", "--kube-namespace-prefix", "ej-"}, nil)
	if c.Kube.NamespaceMap()["*"] != "y" || c.Kube.NamespacePrefix != "ej-" {
		t.Errorf("loaded %+v", c.Kube)
	}
}

// An object's Kubernetes namespace maps back onto the one scheduler namespace whose pods run
// there, and onto none when none or several do.
func TestSchedulerNamespaceOf(t *testing.T) {
	k := Kube{Namespace: "jobs", NamespacePrefix: "ej-", Namespaces: "pay=payments-batch,search=shared,ads=shared"}
	for kns, want := range map[string]string{"jobs": "default", "payments-batch": "pay", "ej-hr": "hr"} {
		if got, err := k.SchedulerNamespaceOf(kns); err != nil || got != want {
			t.Errorf("%q → %q, %v; want %q", kns, got, err, want)
		}
		if want != "default" {
			if back, _ := k.KubeNamespaceOf(want); back != kns {
				t.Errorf("%q does not run its pods in %q but %q", want, kns, back)
			}
		}
	}
	for kns, why := range map[string]string{
		"shared":  "holds the pods of namespaces ads, search", // two namespaces there
		"hr":      "no namespace of the scheduler",            // not prefixed
		"ej-pay":  "no namespace of the scheduler",            // pay runs in payments-batch
		"default": "no namespace of the scheduler",            // default runs in jobs
	} {
		if got, err := k.SchedulerNamespaceOf(kns); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q → %q, %v; want an error saying %q", kns, got, err, why)
		}
	}
	// The defaults: each Kubernetes namespace is the scheduler namespace of its name.
	k = Kube{Namespace: "default"}
	for _, kns := range []string{"default", "pay"} {
		if got, err := k.SchedulerNamespaceOf(kns); err != nil || got != kns {
			t.Errorf("defaults: %q → %q, %v", kns, got, err)
		}
	}
	// `*` gathers every other namespace in one: its objects cannot say whose they are.
	k = Kube{Namespace: "jobs", Namespaces: "*=shared"}
	if _, err := k.SchedulerNamespaceOf("shared"); err == nil {
		t.Error("an object in the `*` namespace was given an owner")
	}
}

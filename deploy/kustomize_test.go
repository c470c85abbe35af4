package deploy_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/ejcloud/elasticjob/config"
)

// kubectlBin is a kubectl with kustomize: on PATH, else the cluster build's
// (EJ_K8S_HOME, or ../shared/k8s-1.37 beside the repository).
func kubectlBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	for _, home := range []string{os.Getenv("EJ_K8S_HOME"), "../../shared/k8s-1.37"} {
		if home == "" {
			continue
		}
		if out, err := exec.Command(filepath.Join(home, "scripts/bin.sh")).Output(); err == nil {
			return filepath.Join(strings.TrimSpace(string(out)), "kubectl")
		}
	}
	t.Skip("no kubectl on PATH and no Kubernetes build (EJ_K8S_HOME): cannot build the kustomizations")
	return ""
}

// object is the part of a manifest the checks read.
type object struct {
	Kind     string
	Metadata struct{ Name, Namespace string }
	Spec     struct {
		Replicas                 *int
		ServiceName              string `yaml:"serviceName"`
		PodManagementPolicy      string `yaml:"podManagementPolicy"`
		ClusterIP                string `yaml:"clusterIP"`
		PublishNotReadyAddresses bool   `yaml:"publishNotReadyAddresses"`
		MinAvailable             *int   `yaml:"minAvailable"`
		Strategy                 struct{ Type string }
		UpdateStrategy           struct{ Type string } `yaml:"updateStrategy"`
		VolumeClaimTemplates     []struct {
			Metadata struct{ Name string }
			Spec     struct {
				AccessModes []string `yaml:"accessModes"`
			}
		} `yaml:"volumeClaimTemplates"`
		Template struct {
			Spec struct {
				ServiceAccountName string `yaml:"serviceAccountName"`
				Containers         []struct {
					Name, Image string
					Env         []struct {
						Name, Value string
						ValueFrom   *struct {
							SecretKeyRef *struct {
								Name, Key string
								Optional  *bool
							} `yaml:"secretKeyRef"`
							FieldRef *struct {
								FieldPath string `yaml:"fieldPath"`
							} `yaml:"fieldRef"`
						} `yaml:"valueFrom"`
					}
					Ports []struct {
						Name          string
						ContainerPort int `yaml:"containerPort"`
					}
					StartupProbe   map[string]any `yaml:"startupProbe"`
					ReadinessProbe map[string]any `yaml:"readinessProbe"`
					LivenessProbe  map[string]any `yaml:"livenessProbe"`
				}
				Volumes []struct {
					Name                  string
					EmptyDir              map[string]any `yaml:"emptyDir"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				}
			}
		}
	}
}

// count is a replica count as written ("unset" when it is not).
func count(n *int) string {
	if n == nil {
		return "unset"
	}
	return strconv.Itoa(*n)
}

// kustomize runs kubectl kustomize on dir and returns its output.
func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	out, err := exec.Command(kubectlBin(t), "kustomize", dir).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr)
	}
	return out
}

// build runs kubectl kustomize on dir and returns its objects by kind/name.
func build(t *testing.T, dir string) map[string]object {
	t.Helper()
	out := kustomize(t, dir)
	objs := map[string]object{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o object
		if err := dec.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if _, dup := objs[o.Kind+"/"+o.Metadata.Name]; dup {
			t.Errorf("%s: %s/%s twice", dir, o.Kind, o.Metadata.Name)
		}
		objs[o.Kind+"/"+o.Metadata.Name] = o
	}
	return objs
}

// schedulerEnv is the scheduler container's environment, a Secret's value as
// "secret:NAME/KEY", $(VAR) expanded as the kubelet does; and the container's image.
func schedulerEnv(t *testing.T, objs map[string]object) (map[string]string, map[string]*bool, string) {
	t.Helper()
	d, ok := objs["Deployment/elasticjob-scheduler"]
	if !ok {
		d, ok = objs["StatefulSet/elasticjob-scheduler"]
	}
	if !ok || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("no Deployment or StatefulSet elasticjob-scheduler with one container")
	}
	c := d.Spec.Template.Spec.Containers[0]
	env, optional := map[string]string{}, map[string]*bool{}
	ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	for _, e := range c.Env {
		v := ref.ReplaceAllStringFunc(e.Value, func(m string) string { return env[m[2:len(m)-1]] })
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			v = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			optional[e.Name] = e.ValueFrom.SecretKeyRef.Optional
		} else if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			v = "elasticjob-scheduler-1" // the pod's name: a StatefulSet's second pod
		} else if e.ValueFrom != nil {
			v = "10.0.0.7" // a field: the pod's IP
		}
		env[e.Name] = v
	}
	return env, optional, c.Image
}

// loads checks the environment is a configuration the scheduler accepts, every
// variable naming one of its settings.
func loads(t *testing.T, where string, env map[string]string) config.Config {
	t.Helper()
	var help bytes.Buffer
	_, _ = config.Load([]string{"-h"}, func(string) (string, bool) { return "", false }, &help)
	for name := range env {
		if strings.HasPrefix(name, "ELASTICJOB_") && !strings.Contains(help.String(), name+"]") {
			t.Errorf("%s: %s is no setting of the scheduler", where, name)
		}
	}
	c, err := config.Load(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	if err != nil {
		t.Fatalf("%s: the scheduler refuses its environment: %v", where, err)
	}
	return c
}

// The default install builds and runs on its own: one replica (Recreate: one writer of
// the embedded store) with the store and history on the PersistentVolumeClaim, the CRDs,
// the RBAC, the objects reconciled and the webhook at the Service (its certificate the
// scheduler's own), no ZooKeeper or MySQL; the image and the task pods' executor image are
// one and an overlay's images: sets both.
func TestKustomizeBase(t *testing.T) {
	objs := build(t, "kubernetes/base")
	for _, k := range []string{"Namespace/elasticjob", "CustomResourceDefinition/cloudapps.elasticjob.io", "CustomResourceDefinition/cloudjobs.elasticjob.io",
		"CustomResourceDefinition/cloudworkflows.elasticjob.io", "ServiceAccount/elasticjob-scheduler", "ClusterRole/elasticjob-scheduler",
		"ClusterRole/elasticjob-scheduler-tasks", "RoleBinding/elasticjob-scheduler-tasks", "ClusterRoleBinding/elasticjob-scheduler",
		"Service/elasticjob-scheduler", "PersistentVolumeClaim/elasticjob-data", "Deployment/elasticjob-scheduler"} {
		if _, ok := objs[k]; !ok {
			t.Errorf("the base has no %s", k)
		}
	}
	d := objs["Deployment/elasticjob-scheduler"]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != "Recreate" || d.Spec.Template.Spec.ServiceAccountName != "elasticjob-scheduler" {
		t.Errorf("replicas %v, strategy %q, account %q: want 1, Recreate, elasticjob-scheduler", count(d.Spec.Replicas), d.Spec.Strategy.Type, d.Spec.Template.Spec.ServiceAccountName)
	}
	claimed := false
	for _, v := range d.Spec.Template.Spec.Volumes {
		claimed = claimed || (v.Name == "data" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "elasticjob-data")
	}
	if !claimed {
		t.Error("the data volume is not the claim elasticjob-data")
	}
	env, optional, img := schedulerEnv(t, objs)
	env["ELASTICJOB_AUTH_PASSWORD"] = "made-at-start" // the command makes one when the Secret has none
	c := loads(t, "base", env)
	if c.ZKServers != "" || c.RDBDriver != "" || c.DataDir != "/data" || !c.Kube.InCluster || !c.Kube.CRDs {
		t.Errorf("zk %q, history %q, data %q, in cluster %v, crds %v: want the embedded store and history in /data, the objects reconciled",
			c.ZKServers, c.RDBDriver, c.DataDir, c.Kube.InCluster, c.Kube.CRDs)
	}
	if env["ELASTICJOB_KUBE_WEBHOOK_URL"] != "https://elasticjob-scheduler.elasticjob.svc:9443" {
		t.Errorf("webhook URL %q: want the Service", env["ELASTICJOB_KUBE_WEBHOOK_URL"])
	}
	if o := optional["ELASTICJOB_AUTH_PASSWORD"]; o == nil || !*o {
		t.Error("the admin password's Secret must be optional in the base (it works without one)")
	}
	if img != env["ELASTICJOB_KUBE_EXECUTOR_IMAGE"] {
		t.Errorf("image %q, executor image %q: want one", img, env["ELASTICJOB_KUBE_EXECUTOR_IMAGE"])
	}

	// An overlay setting the image sets the executor image with it.
	dir := t.TempDir()
	abs, err := filepath.Abs("kubernetes/base")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, abs) // kustomize takes no absolute base
	if err != nil {
		t.Fatal(err)
	}
	k := "resources: [" + rel + "]\nimages:\n- name: localhost/elasticjob-executor\n  newName: registry.example.com/ej/executor\n  newTag: \"1.4\"\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	env, _, img = schedulerEnv(t, build(t, dir))
	if img != "registry.example.com/ej/executor:1.4" || env["ELASTICJOB_KUBE_EXECUTOR_IMAGE"] != img {
		t.Errorf("after images: image %q, executor image %q", img, env["ELASTICJOB_KUBE_EXECUTOR_IMAGE"])
	}
}

// The ha overlay builds three schedulers and nothing else: a StatefulSet started in parallel,
// rolled one pod at a time, a claim per pod; each pod an etcd member (registry=etcd) named as its
// pod, its peers the three pods' stable names under the headless Service (published before they
// are ready: members find each other to become ready); the admin password required from the
// Secret (every replica must share it); a start long enough to wait for a quorum; a disruption
// budget keeping two. No ZooKeeper, no MySQL, no Deployment, no shared claim.
func TestKustomizeHA(t *testing.T) {
	objs := build(t, "kubernetes/ha")
	for k := range objs {
		if strings.Contains(k, "zk") || strings.Contains(k, "mysql") || k == "Deployment/elasticjob-scheduler" || k == "PersistentVolumeClaim/elasticjob-data" {
			t.Errorf("the ha overlay has %s", k)
		}
	}
	s, ok := objs["StatefulSet/elasticjob-scheduler"]
	if !ok {
		t.Fatal("no StatefulSet elasticjob-scheduler")
	}
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 3 || s.Spec.PodManagementPolicy != "Parallel" || s.Spec.UpdateStrategy.Type != "RollingUpdate" ||
		s.Spec.ServiceName != "elasticjob-scheduler-peers" || s.Spec.Template.Spec.ServiceAccountName != "elasticjob-scheduler" {
		t.Errorf("replicas %v, pod management %q, update %q, service %q, account %q: want 3, Parallel, RollingUpdate, elasticjob-scheduler-peers, elasticjob-scheduler",
			count(s.Spec.Replicas), s.Spec.PodManagementPolicy, s.Spec.UpdateStrategy.Type, s.Spec.ServiceName, s.Spec.Template.Spec.ServiceAccountName)
	}
	if v := s.Spec.VolumeClaimTemplates; len(v) != 1 || v[0].Metadata.Name != "data" || len(v[0].Spec.AccessModes) != 1 || v[0].Spec.AccessModes[0] != "ReadWriteOnce" {
		t.Errorf("volume claim templates %+v: want one, data, ReadWriteOnce", v)
	}
	peers := objs["Service/elasticjob-scheduler-peers"]
	if peers.Spec.ClusterIP != "None" || !peers.Spec.PublishNotReadyAddresses {
		t.Errorf("the peers' Service: clusterIP %q, publishNotReadyAddresses %v: want headless, published before ready", peers.Spec.ClusterIP, peers.Spec.PublishNotReadyAddresses)
	}
	if _, ok := objs["Service/elasticjob-scheduler"]; !ok {
		t.Error("no client Service elasticjob-scheduler")
	}
	if pdb := objs["PodDisruptionBudget/elasticjob-scheduler"]; pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != 2 {
		t.Errorf("the disruption budget keeps %v, want 2 (a quorum)", count(pdb.Spec.MinAvailable))
	}
	c0 := s.Spec.Template.Spec.Containers[0]
	if c0.StartupProbe == nil || c0.ReadinessProbe == nil || c0.LivenessProbe == nil {
		t.Fatal("the scheduler needs startup, readiness and liveness probes")
	}
	if p, f := c0.StartupProbe["periodSeconds"], c0.StartupProbe["failureThreshold"]; p == nil || f == nil || toInt(p)*toInt(f) < 300 {
		t.Errorf("the startup probe gives %v × %v s: want at least the 5 minutes a member waits for its quorum", p, f)
	}
	peerPort := false
	for _, p := range c0.Ports {
		peerPort = peerPort || (p.Name == "etcd-peer" && p.ContainerPort == 2380)
	}
	if !peerPort {
		t.Errorf("ports %+v: want etcd-peer 2380", c0.Ports)
	}
	env, optional, img := schedulerEnv(t, objs)
	if o := optional["ELASTICJOB_AUTH_PASSWORD"]; o == nil || *o {
		t.Error("the admin password must come from the Secret in ha")
	}
	if img != env["ELASTICJOB_KUBE_EXECUTOR_IMAGE"] {
		t.Errorf("image %q, executor image %q: want one", img, env["ELASTICJOB_KUBE_EXECUTOR_IMAGE"])
	}
	c := loads(t, "ha", env)
	if c.ZKServers != "" || c.RDBURL != "" || c.DataDir != "/data" {
		t.Errorf("zk %q, history %q, data %q: want neither ZooKeeper nor MySQL, the data on the claim", c.ZKServers, c.RDBURL, c.DataDir)
	}
	if c.EtcdMemberName() != "elasticjob-scheduler-1" || len(c.EtcdPeers()) != 3 || len(c.EtcdEndpoints()) != 0 {
		t.Errorf("member %q, peers %v, endpoints %v: want the pod's name among three embedded members", c.EtcdMemberName(), c.EtcdPeers(), c.EtcdEndpoints())
	}
	for i, p := range c.EtcdPeers() {
		name := "elasticjob-scheduler-" + strconv.Itoa(i)
		if p.Name != name || p.URL != "http://"+name+".elasticjob-scheduler-peers.elasticjob.svc:2380" {
			t.Errorf("peer %d: %+v, want %s at its stable name under the peers' Service", i, p, name)
		}
	}
	if u := c.EtcdPeerURL(); u != "http://elasticjob-scheduler-1.elasticjob-scheduler-peers.elasticjob.svc:2380" {
		t.Errorf("this member's peer URL %q", u)
	}
}

// The ha-zookeeper overlay, the compatibility shape, builds: three replicas on ZooKeeper (the
// ensemble it runs, by its pods' names) and MySQL (the Service it runs), no claim for the
// scheduler, the admin password required from the Secret (every replica must share it).
func TestKustomizeHAZooKeeper(t *testing.T) {
	objs := build(t, "kubernetes/ha-zookeeper")
	d := objs["Deployment/elasticjob-scheduler"]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 || d.Spec.Strategy.Type != "RollingUpdate" {
		t.Errorf("replicas %v strategy %q: want 3, RollingUpdate", count(d.Spec.Replicas), d.Spec.Strategy.Type)
	}
	if _, ok := objs["PersistentVolumeClaim/elasticjob-data"]; ok {
		t.Error("the ha overlay keeps the single replica's claim")
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "data" && (v.PersistentVolumeClaim != nil || v.EmptyDir == nil) {
			t.Errorf("the data volume %+v: want an emptyDir", v)
		}
	}
	env, optional, _ := schedulerEnv(t, objs)
	if o := optional["ELASTICJOB_AUTH_PASSWORD"]; o == nil || *o {
		t.Error("the admin password must come from the Secret in ha")
	}
	c := loads(t, "ha", env)
	zk := objs["StatefulSet/zk"]
	if zk.Spec.Replicas == nil || *zk.Spec.Replicas != 3 || zk.Spec.ServiceName != "zk" {
		t.Fatalf("StatefulSet zk: %+v", zk.Spec)
	}
	if _, ok := objs["Service/zk"]; !ok {
		t.Error("no Service zk")
	}
	if want := "zk-0.zk.elasticjob.svc:2181,zk-1.zk.elasticjob.svc:2181,zk-2.zk.elasticjob.svc:2181"; c.ZKServers != want {
		t.Errorf("zk_servers %q, want the ensemble's pods %q", c.ZKServers, want)
	}
	if _, ok := objs["Service/mysql"]; !ok || c.RDBDriver != "mysql" || !strings.Contains(c.RDBURL, "mysql.elasticjob.svc:3306/elasticjob") {
		t.Errorf("history %q at %q: want mysql at the Service mysql", c.RDBDriver, c.RDBURL)
	}
	if env["ELASTICJOB_EVENT_TRACE_RDB_PASSWORD"] != "secret:elasticjob-scheduler/event_trace_rdb_password" {
		t.Errorf("the history password comes from %q", env["ELASTICJOB_EVENT_TRACE_RDB_PASSWORD"])
	}
}

// toInt is a YAML number as an int.
func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case uint64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

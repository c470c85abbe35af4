package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// The chart is rendered and linted with Helm's own chart loader, template engine and linter
// (helm.sh/helm/v3, the code `helm template` and `helm lint` run), for the cluster the
// real-cluster tier runs.
const chartDir = "helm/elasticjob"

var kube137 = chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

// render renders the chart with the values into namespace elasticjob and returns its
// objects by kind/name, and each object as a generic map for the comparisons.
func render(t *testing.T, vals map[string]any) (map[string]object, map[string]map[string]any, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load %s: %v", chartDir, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = kube137
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "ej", Namespace: "elasticjob", IsInstall: true}, caps)
	if err != nil {
		return nil, nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, nil, err
	}
	var docs bytes.Buffer
	for name, text := range files {
		if strings.HasSuffix(name, ".yaml") {
			docs.WriteString("\n---\n" + text)
		}
	}
	for _, crd := range ch.CRDObjects() { // installed from crds/ as they are
		docs.WriteString("\n---\n" + string(crd.File.Data))
	}
	objs, maps := map[string]object{}, map[string]map[string]any{}
	for _, doc := range strings.Split(docs.String(), "\n---\n") {
		if strings.TrimSpace(strings.Join(nonComments(doc), "")) == "" {
			continue
		}
		var o object
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("a rendered object does not parse: %v\n%s", err, doc)
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		key := o.Kind + "/" + o.Metadata.Name
		if _, dup := objs[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		objs[key], maps[key] = o, m
	}
	return objs, maps, nil
}

func nonComments(doc string) []string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return out
}

// generic is kubectl kustomize's output as generic maps by kind/name.
func generic(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	out := kustomize(t, dir)
	maps := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		md, _ := m["metadata"].(map[string]any)
		maps[m["kind"].(string)+"/"+md["name"].(string)] = m
	}
	return maps
}

// The chart's defaults are the kustomize base: the same objects (the Namespace aside: Helm
// installs into one), the same rights, the same scheduler settings and image, the same claim;
// and Helm's linter finds nothing to say.
func TestHelmChartIsTheKustomizeBase(t *testing.T) {
	objs, maps, err := render(t, nil)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	base := build(t, "kubernetes/base")
	for k := range base {
		if _, ok := objs[k]; !ok && k != "Namespace/elasticjob" {
			t.Errorf("the chart has no %s", k)
		}
	}
	for k := range objs {
		if _, ok := base[k]; !ok {
			t.Errorf("the chart has %s, the base does not", k)
		}
	}
	want, _, wantImg := schedulerEnv(t, base)
	got, optional, img := schedulerEnv(t, objs)
	if !reflect.DeepEqual(got, want) || img != wantImg {
		t.Errorf("the chart's scheduler: image %q env %v\nthe base's: image %q env %v", img, got, wantImg, want)
	}
	if o := optional["ELASTICJOB_AUTH_PASSWORD"]; o == nil || !*o {
		t.Error("the admin password's Secret must be optional by default (the scheduler makes one)")
	}
	d := objs["Deployment/elasticjob-scheduler"]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != "Recreate" {
		t.Errorf("replicas %v, strategy %q: want 1, Recreate", count(d.Spec.Replicas), d.Spec.Strategy.Type)
	}
	gbase := generic(t, "kubernetes/base")
	for _, k := range []string{"ClusterRole/elasticjob-scheduler", "ClusterRole/elasticjob-scheduler-tasks", "RoleBinding/elasticjob-scheduler-tasks",
		"ClusterRoleBinding/elasticjob-scheduler", "CustomResourceDefinition/cloudapps.elasticjob.io", "CustomResourceDefinition/cloudjobs.elasticjob.io",
		"CustomResourceDefinition/cloudworkflows.elasticjob.io", "Service/elasticjob-scheduler"} {
		for _, field := range []string{"rules", "roleRef", "subjects", "spec"} {
			if !reflect.DeepEqual(maps[k][field], gbase[k][field]) {
				t.Errorf("%s %s: the chart's differs from the base's\nchart: %v\nbase:  %v", k, field, maps[k][field], gbase[k][field])
			}
		}
	}
	for _, crd := range []string{"cloudapps", "cloudjobs", "cloudworkflows"} {
		a, errA := os.ReadFile(chartDir + "/crds/" + crd + ".yaml")
		b, errB := os.ReadFile("kubernetes/base/crds/" + crd + ".yaml")
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("crds/%s.yaml: the chart's and the base's differ (scripts/gen-crds.py writes both): %v %v", crd, errA, errB)
		}
	}
	l := lint.AllWithKubeVersion(chartDir, nil, "elasticjob", &kube137)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
}

// replicas: 3 and nothing else is the ha overlay: the same objects, a StatefulSet of the same
// shape (parallel start, rolling one at a time, a claim each, the peers' headless Service), the
// same scheduler settings (an etcd member per pod, its peers the pods' stable names), a
// disruption budget keeping a quorum; and Helm's linter finds nothing to say. Five replicas name
// five peers.
func TestHelmChartHAEtcd(t *testing.T) {
	objs, maps, err := render(t, map[string]any{"replicas": 3})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	ha := build(t, "kubernetes/ha")
	for k := range ha {
		if _, ok := objs[k]; !ok && k != "Namespace/elasticjob" {
			t.Errorf("the chart has no %s", k)
		}
	}
	for k := range objs {
		if _, ok := ha[k]; !ok {
			t.Errorf("the chart has %s, the ha overlay does not", k)
		}
	}
	want, _, wantImg := schedulerEnv(t, ha)
	got, optional, img := schedulerEnv(t, objs)
	if !reflect.DeepEqual(got, want) || img != wantImg {
		t.Errorf("the chart's scheduler: image %q env %v\nthe ha overlay's: image %q env %v", img, got, wantImg, want)
	}
	if o := optional["ELASTICJOB_AUTH_PASSWORD"]; o == nil || *o {
		t.Error("with several replicas the admin password must come from the Secret")
	}
	s, h := objs["StatefulSet/elasticjob-scheduler"], ha["StatefulSet/elasticjob-scheduler"]
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 3 || s.Spec.PodManagementPolicy != h.Spec.PodManagementPolicy || s.Spec.UpdateStrategy != h.Spec.UpdateStrategy ||
		s.Spec.ServiceName != h.Spec.ServiceName || len(s.Spec.VolumeClaimTemplates) != 1 || s.Spec.VolumeClaimTemplates[0].Metadata.Name != "data" {
		t.Errorf("the chart's StatefulSet %+v\nthe ha overlay's %+v", s.Spec, h.Spec)
	}
	c, hc := s.Spec.Template.Spec.Containers[0], h.Spec.Template.Spec.Containers[0]
	if !reflect.DeepEqual(c.Ports, hc.Ports) || !reflect.DeepEqual(c.StartupProbe, hc.StartupProbe) || !reflect.DeepEqual(c.ReadinessProbe, hc.ReadinessProbe) ||
		!reflect.DeepEqual(c.LivenessProbe, hc.LivenessProbe) {
		t.Errorf("the chart's ports and probes differ from the ha overlay's:\n%+v\n%+v", c, hc)
	}
	gha := generic(t, "kubernetes/ha")
	for _, k := range []string{"Service/elasticjob-scheduler-peers", "Service/elasticjob-scheduler"} {
		if !reflect.DeepEqual(maps[k]["spec"], gha[k]["spec"]) {
			t.Errorf("%s: the chart's differs from the ha overlay's\nchart: %v\nha:    %v", k, maps[k]["spec"], gha[k]["spec"])
		}
	}
	if p := objs["PodDisruptionBudget/elasticjob-scheduler"]; p.Spec.MinAvailable == nil || *p.Spec.MinAvailable != 2 {
		t.Errorf("the disruption budget keeps %v, want 2", count(p.Spec.MinAvailable))
	}
	l := lint.AllWithKubeVersion(chartDir, map[string]any{"replicas": 3}, "elasticjob", &kube137)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint (replicas 3): %s", m)
		}
	}

	objs, _, err = render(t, map[string]any{"replicas": 5, "persistence": map[string]any{"storageClass": "local-path"}})
	if err != nil {
		t.Fatalf("render 5: %v", err)
	}
	env, _, _ := schedulerEnv(t, objs)
	if cfg := loads(t, "helm 5", env); len(cfg.EtcdPeers()) != 5 || cfg.EtcdPeers()[4].URL != "http://elasticjob-scheduler-4.elasticjob-scheduler-peers.elasticjob.svc:2380" {
		t.Errorf("five replicas' peers %v", cfg.EtcdPeers())
	}
	if _, m, _ := render(t, map[string]any{"replicas": 5, "persistence": map[string]any{"storageClass": "local-path"}}); !strings.Contains(
		fmtAny(m["StatefulSet/elasticjob-scheduler"]["spec"]), "storageClassName:local-path") {
		t.Error("persistence.storageClass does not reach the claims' template")
	}
}

// fmtAny is a value as fmt prints it.
func fmtAny(v any) string { return fmt.Sprint(v) }

// With a ZooKeeper and a MySQL the chart is the ha-zookeeper overlay's scheduler: three replicas rolling
// one at a time, no claim, the admin password required from the Secret, a disruption budget.
func TestHelmChartHA(t *testing.T) {
	zk := "zk-0.zk.elasticjob.svc:2181,zk-1.zk.elasticjob.svc:2181,zk-2.zk.elasticjob.svc:2181"
	objs, _, err := render(t, map[string]any{"replicas": 3, "registry": map[string]any{"zookeeper": zk},
		"history": map[string]any{"mysqlURL": "jdbc:mysql://mysql.elasticjob.svc:3306/elasticjob"}})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	got, optional, _ := schedulerEnv(t, objs)
	want, _, _ := schedulerEnv(t, build(t, "kubernetes/ha-zookeeper"))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the chart's HA scheduler env %v\nthe ha overlay's %v", got, want)
	}
	if o := optional["ELASTICJOB_AUTH_PASSWORD"]; o == nil || *o {
		t.Error("with several replicas the admin password must come from the Secret")
	}
	c := loads(t, "helm ha", got)
	if c.ZKServers != zk || c.RDBDriver != "mysql" {
		t.Errorf("zk %q history %q", c.ZKServers, c.RDBDriver)
	}
	d := objs["Deployment/elasticjob-scheduler"]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 || d.Spec.Strategy.Type != "RollingUpdate" {
		t.Errorf("replicas %v strategy %q: want 3, RollingUpdate", count(d.Spec.Replicas), d.Spec.Strategy.Type)
	}
	if _, ok := objs["PersistentVolumeClaim/elasticjob-data"]; ok {
		t.Error("a claim with the registry in ZooKeeper")
	}
	if _, ok := objs["PodDisruptionBudget/elasticjob-scheduler"]; !ok {
		t.Error("no PodDisruptionBudget with three replicas")
	}
}

// Values that cannot work fail the render with the reason, as `helm install` shows it.
func TestHelmChartRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"replicas": 2}, "replicas 2: the replicated schedulers' etcd members need an odd count (3 or 5)"},
		{map[string]any{"replicas": 0}, "replicas 0: at least 1"},
		{map[string]any{"kube": map[string]any{"binding": "nodeName"}}, `kube.binding "nodeName": use direct or kube-scheduler`},
		{map[string]any{"kube": map[string]any{"crds": false}}, "kube.webhook needs kube.crds"},
	} {
		_, _, err := render(t, c.vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %v: error %v, want one saying %q", c.vals, err, c.want)
		}
	}
	// Settings of the values reach the scheduler.
	objs, _, err := render(t, map[string]any{"kube": map[string]any{"binding": "kube-scheduler", "namespaces": "pay=team-pay"},
		"image":    map[string]any{"repository": "registry.example.com/ej/executor", "tag": "1.4"},
		"extraEnv": []any{map[string]any{"name": "ELASTICJOB_TASK_UNREACHABLE_TIMEOUT", "value": "5m"}}})
	if err != nil {
		t.Fatal(err)
	}
	env, _, img := schedulerEnv(t, objs)
	env["ELASTICJOB_AUTH_PASSWORD"] = "made-at-start"
	c := loads(t, "helm values", env)
	if img != "registry.example.com/ej/executor:1.4" || c.Kube.ExecutorImage != img || c.Kube.Binding != "kube-scheduler" || env["ELASTICJOB_KUBE_NAMESPACES"] != "pay=team-pay" {
		t.Errorf("image %q executor image %q binding %q namespaces %q", img, c.Kube.ExecutorImage, c.Kube.Binding, env["ELASTICJOB_KUBE_NAMESPACES"])
	}
}

//go:build e2e

package realkube

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ejcloud/elasticjob/api/crd"
	"github.com/ejcloud/elasticjob/e2e/harness"
)

// installNS is the Kubernetes namespace of the default install (deploy/kubernetes/base).
const installNS = "elasticjob"

// installation is deploy/kubernetes/base applied with kubectl apply -k through a test-only
// overlay: what this cluster needs and nothing else (host networking and the API server
// on 127.0.0.1, as there is no pod network to the host, no kube-proxy and no cluster DNS;
// the locally imported image; free ports).
type installation struct {
	dir        string // the overlay
	port, hook int    // the API's and the webhook's ports
}

// write writes the overlay with the scheduler's kube_binding.
func (in *installation) write(t *testing.T, binding string) {
	t.Helper()
	base, err := filepath.Abs("../../deploy/kubernetes/base")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(in.dir, base) // kustomize takes no absolute base
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	tag := executorImage[strings.LastIndex(executorImage, ":")+1:]
	self := fmt.Sprintf("http://127.0.0.1:%d", in.port)
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: localhost/elasticjob-executor
  newTag: %s
patches:
- path: test-cluster.yaml
- target: {kind: Deployment, name: elasticjob-scheduler}
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/0/ports
      value: [{name: http, containerPort: %d}, {name: webhook, containerPort: %d}]
`, rel, tag, in.port, in.hook)
	patch := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: elasticjob-scheduler, namespace: %s}
spec:
  template:
    spec:
      hostNetwork: true
      dnsPolicy: ClusterFirstWithHostNet
      containers:
      - name: scheduler
        imagePullPolicy: Never
        readinessProbe: {httpGet: {host: 127.0.0.1}}   # it listens on loopback only here
        livenessProbe: {httpGet: {host: 127.0.0.1}}
        env:
        - {name: KUBERNETES_SERVICE_HOST, value: %q}
        - {name: KUBERNETES_SERVICE_PORT, value: %q}
        - {name: ELASTICJOB_HTTP_ADDRESS, value: 127.0.0.1}
        - {name: ELASTICJOB_HTTP_PORT, value: "%d"}
        - {name: ELASTICJOB_ADVERTISE_URL, value: %q}
        - {name: ELASTICJOB_KUBE_SCHEDULER_URL, value: %q}
        - {name: ELASTICJOB_KUBE_HOST_NETWORK, value: "true"}
        - {name: ELASTICJOB_KUBE_IMAGE_PULL_POLICY, value: Never}
        - {name: ELASTICJOB_KUBE_WEBHOOK_URL, value: "https://127.0.0.1:%d"}
        - {name: ELASTICJOB_KUBE_BINDING, value: %s}
        - {name: ELASTICJOB_KUBE_CRD_RESYNC, value: 1s}
        - {name: ELASTICJOB_OFFER_REFUSE_SECONDS, value: 1s}
        - {name: ELASTICJOB_RECONCILE_WAIT, value: 5s}
`, installNS, api.Hostname(), api.Port(), in.port, self, self, in.hook, binding)
	for name, body := range map[string]string{"kustomization.yaml": k, "test-cluster.yaml": patch} {
		if err := os.WriteFile(filepath.Join(in.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// apply applies the overlay and waits for the rollout.
func (in *installation) apply(t *testing.T) {
	t.Helper()
	start := time.Now()
	defer func() {
		t.Logf("kubectl apply -k -> the scheduler's pod Ready: %v", time.Since(start).Round(100*time.Millisecond))
	}()
	if out, err := kubectl(t, "", "apply", "-k", in.dir); err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	}
	if out, err := kubectl(t, "", "-n", installNS, "rollout", "status", "deploy/elasticjob-scheduler", "--timeout=180s"); err != nil {
		t.Fatalf("the scheduler's rollout: %v\n%s\n%s", err, out, in.describe(t))
	}
}

// describe is what kubectl says about the install's pods and the scheduler's log.
func (in *installation) describe(t *testing.T) string {
	pods, _ := kubectl(t, "", "-n", installNS, "describe", "pods")
	logs, _ := kubectl(t, "", "-n", installNS, "logs", "deploy/elasticjob-scheduler", "--tail=150")
	return pods + "\n--- the scheduler's log:\n" + logs
}

// log is the running scheduler pod's log.
func (in *installation) log(t *testing.T) string {
	out, _ := kubectl(t, "", "-n", installNS, "logs", "deploy/elasticjob-scheduler")
	return out
}

// password is the admin password the scheduler made at its first start, read as the docs say.
func (in *installation) password(t *testing.T) string {
	t.Helper()
	out, err := kubectl(t, "", "-n", installNS, "exec", "deploy/elasticjob-scheduler", "-c", "scheduler", "--", "cat", "/data/admin-password")
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("read the admin password: %v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// scheduler is the installed scheduler's API, as the admin, once the webhook is registered
// and the objects watched.
func (in *installation) scheduler(t *testing.T) *scheduler {
	t.Helper()
	pw := in.password(t)
	s := &scheduler{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", in.port), ns: installNS,
		auth: func(r *http.Request) { r.SetBasicAuth("admin", pw) }}
	eventually(t, waitLong, harness.Healthy(httpClient, s.base), "the installed scheduler to answer /healthz")
	if code, _ := (harness.API{T: t, Base: s.base, Client: httpClient}).Do(http.MethodGet, "/api/app/list", nil); code != http.StatusUnauthorized {
		t.Errorf("the API without credentials: %d, want 401", code)
	}
	eventually(t, waitLong, func() bool {
		l := in.log(t)
		return strings.Contains(l, `msg="webhook: registered"`) && strings.Contains(l, "resource=cloudworkflows") && strings.Contains(l, "msg=subscribed")
	}, "the installed scheduler to register its webhook, watch the objects and sync its informers")
	return s
}

// on is s for a subtest.
func on(t *testing.T, s *scheduler) *scheduler { c := *s; c.t = t; return &c }

// TestInstalledScheduler: the default install, deploy/kubernetes/base, applied with
// kubectl apply -k (through a test-only overlay: host networking, the imported image,
// free ports) on a claim the test's hostPath volume backs, runs on its own with a password
// it made: a job from a hosted package; a job reading a Secret as env and a ConfigMap as a
// file under its own service account (its token's identity); a claim written by one run
// and read by the next; CloudApp and CloudJob objects applied with kubectl (registered,
// run, status filled, a bad cron refused with the API's message, REST edits refused with
// 409, deletion deregistering). Then the upgrade the docs describe (the overlay changed to
// kube_binding=kube-scheduler, applied again): the new pod finds the registry, the history,
// the hosted package and the password on the claim, and its pods are bound by kube-scheduler.
func TestInstalledScheduler(t *testing.T) {
	requireK8s(t)
	startControllers(t)
	awaitNoCRDs(t)
	dataDir := hostPathVolume(t, "ej-install-data", installNS, "elasticjob-data")
	in := &installation{dir: t.TempDir(), port: harness.FreePort(t), hook: harness.FreePort(t)}
	in.write(t, "direct")
	t.Cleanup(func() { uninstall(t, in) })
	in.apply(t)
	s := in.scheduler(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the install:\n%s", in.describe(t))
		}
	})
	if _, err := os.Stat(filepath.Join(dataDir, "admin-password")); err != nil {
		t.Errorf("the password is not on the claim: %v", err)
	}

	t.Run("job", func(t *testing.T) {
		s := on(t, s)
		s.publishApp("rec", true)
		s.register(transient("hello", "rec", 2, "sleep 0"))
		s.trigger("hello")
		eventually(t, waitLong, func() bool { return len(s.ended("hello")) == 2 }, "the 2 shards' ends in the history")
		for _, e := range s.ended("hello") {
			if !e.Success {
				t.Errorf("shard %d failed: %s", e.ShardingItem, deref(e.FailureCause))
			}
		}
		if n := rec.count("hello", "end"); n != 2 {
			t.Errorf("%d shards ran, want 2", n)
		}
	})

	// The install runs the default namespace's pods in its own Kubernetes namespace, beside
	// its Secret (the admin password) and its data claim (the registry, the secrets key):
	// there a template may name no Secret and no claim (docs/kubernetes.md), and the
	// registration says to give the default namespace a Kubernetes namespace of its own.
	// TestPodTemplateSecretAndConfigMap runs such a template in a namespace of its own.
	t.Run("own-namespace", func(t *testing.T) {
		s := on(t, s)
		s.must(http.MethodPost, "/api/app", map[string]any{"appName": "own", "bootstrapScript": "run.sh", "cpuCount": 0.05, "memoryMB": 64})
		for name, spec := range map[string]map[string]any{
			"reads-secret": {"containers": []any{map[string]any{"name": "task", "env": []any{map[string]any{"name": "ADMIN",
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "elasticjob-scheduler", "key": "admin-password"}}}}}}},
			"mounts-data": {"volumes": []any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "elasticjob-data"}}},
				"containers": []any{map[string]any{"name": "task", "volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data"}}}}},
		} {
			code, body := s.api().Do(http.MethodPost, "/api/job/register", map[string]any{"jobName": name, "appName": "own", "jobExecutionType": "TRANSIENT",
				"shardingTotalCount": 1, "cpuCount": 0.05, "memoryMB": 32, "jobType": "SCRIPT", "props": map[string]string{"script.command.line": "true"},
				"podTemplate": map[string]any{"spec": spec}})
			if code != http.StatusBadRequest || !strings.Contains(string(body), "kube_namespace") {
				t.Errorf("%s: %d %s, want 400 naming kube_namespace", name, code, body)
			}
		}
	})

	t.Run("objects", func(t *testing.T) {
		objectNS = installNS
		objectsLifecycle(t, on(t, s), dynClient(t))
	})

	t.Run("upgrade-to-kube-scheduler-binding", func(t *testing.T) {
		before := in.password(t)
		in.write(t, "kube-scheduler")
		in.apply(t)
		s := on(t, in.scheduler(t))
		if after := in.password(t); after != before {
			t.Error("the upgrade made a new admin password")
		}
		if n := len(s.ended("hello")); n != 2 {
			t.Errorf("hello's history after the upgrade: %d runs, want 2", n)
		}
		s.register(transient("pinned", "rec", 2, "sleep 3")) // the hosted package, kept on the claim
		s.trigger("pinned")
		var bound []corev1.Pod
		eventually(t, waitLong, func() bool {
			for _, p := range pods(t, installNS, "pinned") {
				if p.Spec.NodeName != "" {
					bound = append(bound, p)
				}
			}
			return len(s.ended("pinned")) == 2
		}, "the 2 shards to run")
		for _, e := range s.ended("pinned") {
			if !e.Success {
				t.Errorf("shard %d failed: %s", e.ShardingItem, deref(e.FailureCause))
			}
		}
		if len(bound) == 0 {
			t.Fatal("no bound pod seen while the shards ran")
		}
		for _, p := range bound {
			a := p.Spec.Affinity
			if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil || p.Spec.NodeName != "127.0.0.1" {
				t.Errorf("pod %s: node %q, affinity %v: want pinned by affinity and bound by kube-scheduler", p.Name, p.Spec.NodeName, a)
			}
		}
	})
}

// startControllers runs, for this test, the controllers of kube-controller-manager an
// install needs that the tier's cluster runs without: Deployments, ReplicaSets and StatefulSets, volume
// binding and protection, the default service account and the root CA map a token needs, namespace
// deletion and garbage collection (to uninstall).
func startControllers(t *testing.T) {
	t.Helper()
	run := filepath.Dir(kubeconfig)
	kcm := filepath.Join(run, "kcm.kubeconfig")
	cmd := exec.Command(filepath.Join(k8sBin, "kube-controller-manager"),
		"--kubeconfig", kcm, "--authentication-kubeconfig", kcm, "--authorization-kubeconfig", kcm,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(harness.FreePort(t)), "--leader-elect=false",
		"--use-service-account-credentials=true", "--root-ca-file", filepath.Join(run, "pki/ca.crt"),
		"--service-account-private-key-file", filepath.Join(run, "pki/sa.key"), "--profiling=false",
		"--controllers", "deployment-controller,replicaset-controller,statefulset-controller,persistentvolume-binder-controller,persistentvolume-protection-controller,"+
			"persistentvolumeclaim-protection-controller,root-ca-certificate-publisher-controller,serviceaccount-controller,namespace-controller,garbage-collector-controller")
	p := harness.Start(t, "kube-controller-manager", filepath.Join(t.TempDir(), "kcm.log"), cmd)
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("kube-controller-manager's log:\n%s", harness.Tail(p.Log(), 60))
		}
	})
}

// awaitNoCRDs waits until an earlier test's CRDs are gone (they are deleted without waiting).
func awaitNoCRDs(t *testing.T) {
	t.Helper()
	eventually(t, waitLong, func() bool {
		out, err := kubectl(t, "", "get", "crd", "-o", "name")
		return err == nil && !strings.Contains(out, crd.Group)
	}, "the CRDs of an earlier test to be deleted")
}

// hostPathVolume makes a PersistentVolume on a fresh directory of this machine, bound ahead
// to the claim ns/claim, and removes both at cleanup; it returns the directory.
func hostPathVolume(t *testing.T, name, ns, claim string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // the scheduler runs as a user of its own
		t.Fatal(err)
	}
	dirType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}},
		ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: claim},
		StorageClassName:       "",
	}}
	ctx := context.Background()
	if _, err := admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admin.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete the volume %s: %v", name, err)
		}
		eventually(t, waitLong, func() bool {
			_, err := admin.CoreV1().PersistentVolumes().Get(ctx, name, getOpts)
			return apierrors.IsNotFound(err)
		}, "the volume %s to be deleted", name)
		_ = os.RemoveAll(dir)
	})
	return dir
}

// uninstall deletes what the install made, as the docs say, and waits until it is gone (the
// namespace with its pods and claims), so the tier's later tests find none of it.
func uninstall(t *testing.T, in *installation) {
	if out, err := kubectl(t, "", "delete", "-k", in.dir, "--ignore-not-found", "--wait", "--timeout=180s"); err != nil {
		t.Errorf("kubectl delete -k: %v\n%s", err, out)
	}
	ctx := context.Background()
	if err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, crd.WebhookConfigName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete the webhook's configuration: %v", err)
	}
	eventually(t, waitLong, func() bool {
		_, err := admin.CoreV1().Namespaces().Get(ctx, installNS, getOpts)
		return apierrors.IsNotFound(err)
	}, "the namespace %s to be deleted", installNS)
}

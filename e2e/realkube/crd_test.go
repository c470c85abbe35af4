//go:build e2e

package realkube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/ejcloud/elasticjob/api/crd"
	"github.com/ejcloud/elasticjob/e2e/harness"
)

// objectNS is where the test's objects live: its scheduler's kube_namespace, where the
// scheduler namespace default runs its pods (config.Kube.SchedulerNamespaceOf), so they
// belong to default, which every scheduler has. Set by TestDefinitionsAsKubernetesObjects.
var objectNS string

// kubectl runs the cluster's kubectl with the admin's kubeconfig.
func kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(k8sBin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installCRDs applies deploy/kubernetes/base/crds and waits until they are served; at cleanup
// it removes them (with every object) and the webhook's configuration.
func installCRDs(t testing.TB) dynamic.Interface {
	t.Helper()
	if out, err := kubectl(t, "", "apply", "-f", "../../deploy/kubernetes/base/crds"); err != nil {
		t.Fatalf("kubectl apply the CRDs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, crd.WebhookConfigName, metav1.DeleteOptions{})
		if out, err := kubectl(t, "", "delete", "--wait=false", "-f", "../../deploy/kubernetes/base/crds"); err != nil {
			t.Logf("kubectl delete the CRDs: %v\n%s", err, out)
		}
	})
	if out, err := kubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "-f", "../../deploy/kubernetes/base/crds"); err != nil {
		t.Fatalf("the CRDs: %v\n%s", err, out)
	}
	return dynClient(t)
}

// dynClient is a dynamic client with the admin's kubeconfig.
func dynClient(t testing.TB) dynamic.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// startObjectScheduler starts a scheduler reconciling the objects and serving the
// webhook on a free port of 127.0.0.1 (the API server runs on this machine's network).
func startObjectScheduler(t *testing.T, ns string) *scheduler {
	t.Helper()
	hook := "https://127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	s := startScheduler(t, "scheduler", schedOpts{ns: ns, extra: []string{"--kube-crds", "true", "--kube-crd-resync", "1s",
		"--kube-webhook-url", hook}})
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		return strings.Contains(s.Log(), "msg=\"webhook: registered\"") && strings.Contains(s.Log(), "resource=cloudworkflows")
	}, "the webhook to be registered and the objects watched")
	return s
}

func cloudJobYAML(name, cron string) string {
	return fmt.Sprintf(`apiVersion: elasticjob.io/v1
kind: CloudJob
metadata:
  name: %s
  namespace: %s
spec:
  appName: crd-app
  jobExecutionType: TRANSIENT
  cron: %q
  shardingTotalCount: 2
  jobParameter: from-git
  cpuCount: 0.05
  memoryMB: 32
`, name, objectNS, cron)
}

// A team's definitions in git reach the scheduler through kubectl apply: the app and the
// job are registered and run, the job's status fills; a bad cron is refused at apply with
// the REST API's message; the API refuses to change what an object owns; deleting the
// object deregisters the job.
func TestDefinitionsAsKubernetesObjects(t *testing.T) {
	if k8sHome == "" {
		t.Skip(skipReason)
	}
	ns := namespace(t)
	objectNS = ns
	dyn := installCRDs(t)
	s := startObjectScheduler(t, ns)
	objectsLifecycle(t, s, dyn)
	applyLatency(t, dyn, s, 20)
}

// objectsLifecycle: in objectNS, where s runs the default namespace's pods, a CloudApp and
// a CloudJob applied with kubectl are registered and run, the job's status fills; an object
// in a Kubernetes namespace of no scheduler namespace and a bad cron are refused at apply
// (the latter with the REST API's message); the REST API refuses to change or deregister
// the owned job (409); kubectl delete deregisters it and its history stays.
func objectsLifecycle(t *testing.T, s *scheduler, dyn dynamic.Interface) {
	t.Helper()
	ns := objectNS
	// An object in a Kubernetes namespace where no namespace of the scheduler runs its pods
	// belongs to none: refused at apply, saying where it should be.
	stray := strings.Replace(cloudJobYAML("crd-stray", "0 0 3 * * ?"), "namespace: "+ns, "namespace: default", 1)
	if out, err := kubectl(t, stray, "apply", "-f", "-"); err == nil || !strings.Contains(out, "no namespace of the scheduler runs its pods in Kubernetes namespace default") {
		t.Errorf("an object in Kubernetes namespace default (not the scheduler's): %v\n%s", err, out)
	}
	app := fmt.Sprintf(`apiVersion: elasticjob.io/v1
kind: CloudApp
metadata: {name: crd-app, namespace: %s}
spec: {appURL: %q, bootstrapScript: bin/run.sh, cpuCount: 0.05, memoryMB: 64}
`, objectNS, rec.url+"/app.tgz")
	if out, err := kubectl(t, app+"---\n"+cloudJobYAML("crd-job", "0/3 * * * * ?"), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "-n", objectNS, "delete", "--ignore-not-found", "cloudjobs,cloudapps", "--all")
	})

	// Registered as the spec says, and run on its cron.
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		code, _ := s.api().Do(http.MethodGet, "/api/job/jobs/crd-job", nil)
		return code == http.StatusOK
	}, "the CloudJob to be registered")
	var cfg map[string]any
	decode(t, s.must(http.MethodGet, "/api/job/jobs/crd-job", nil), &cfg)
	if cfg["jobParameter"] != "from-git" || cfg["shardingTotalCount"] != float64(2) || cfg["appName"] != "crd-app" {
		t.Errorf("registered as %v", cfg)
	}
	harness.Eventually(t, waitLong, pollEvery, func() bool { return len(s.ended("crd-job")) >= 2 }, "a run of crd-job to end")

	// Its status: registered for this generation, fire times and the last result.
	cj := crd.Kinds[1].GVR()
	var st map[string]any
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		u, err := dyn.Resource(cj).Namespace(objectNS).Get(context.Background(), "crd-job", metav1.GetOptions{})
		if err != nil {
			return false
		}
		st, _, _ = unstructured.NestedMap(u.Object, "status")
		return st["lastResult"] == "SUCCEEDED" && st["lastFireTime"] != nil && st["nextFireTime"] != nil &&
			st["observedGeneration"] == u.GetGeneration()
	}, "the status of crd-job to fill (now %v)", &st)
	conds, _ := st["conditions"].([]any)
	if len(conds) != 1 || conds[0].(map[string]any)["status"] != "True" || conds[0].(map[string]any)["reason"] != "Registered" {
		t.Errorf("conditions %v", conds)
	}

	// A bad cron is refused at apply, with the API's own message.
	bad := cloudJobYAML("crd-bad", "0 0 25 * * ?")
	out, err := kubectl(t, bad, "apply", "-f", "-")
	if err == nil {
		t.Fatalf("kubectl apply of a bad cron succeeded: %s", out)
	}
	code, body := s.api().Do(http.MethodPost, "/api/job/register", map[string]any{"jobName": "crd-bad", "appName": "crd-app",
		"jobExecutionType": "TRANSIENT", "cron": "0 0 25 * * ?", "shardingTotalCount": 2, "cpuCount": 0.05, "memoryMB": 32})
	var apiErr struct{ Message string }
	_ = json.Unmarshal(body, &apiErr)
	if code != http.StatusBadRequest || apiErr.Message == "" || !strings.Contains(out, apiErr.Message) || !strings.Contains(out, "denied the request") {
		t.Errorf("kubectl said %q; the API (%d) %q", out, code, apiErr.Message)
	}
	if _, err := dyn.Resource(cj).Namespace(objectNS).Get(context.Background(), "crd-bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused object exists: %v", err)
	}

	// The API refuses to change or delete what an object owns.
	code, body = s.api().Do(http.MethodPut, "/api/job/update", map[string]any{"jobName": "crd-job", "shardingTotalCount": 5})
	if code != http.StatusConflict || !strings.Contains(string(body), "CloudJob "+objectNS+"/crd-job") {
		t.Errorf("REST update of an owned job: %d %s", code, body)
	}
	code, body = s.api().Do(http.MethodDelete, "/api/job/crd-job/deregister", nil)
	if code != http.StatusConflict || !strings.Contains(string(body), "CloudJob "+objectNS+"/crd-job") {
		t.Errorf("REST deregister of an owned job: %d %s", code, body)
	}

	// Deleted in Kubernetes: deregistered.
	if out, err := kubectl(t, "", "-n", objectNS, "delete", "cloudjob", "crd-job"); err != nil {
		t.Fatalf("kubectl delete: %v\n%s", err, out)
	}
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		code, _ := s.api().Do(http.MethodGet, "/api/job/jobs/crd-job", nil)
		return code == http.StatusNotFound
	}, "crd-job to be deregistered")
	// Its history stays in the scheduler's store.
	if len(s.ended("crd-job")) < 2 {
		t.Error("the deregistered job's history is gone")
	}
}

// applyLatency measures, n times, an object's create (admitted through the webhook) to its
// definition served by the REST API, and logs the figures (docs/benchmarks.md; no test
// asserts on time). Each job is deleted again.
func applyLatency(t *testing.T, dyn dynamic.Interface, s *scheduler, n int) {
	gvr := crd.Kinds[1].GVR()
	var took, admitted, bare []time.Duration
	for i := range n {
		name := fmt.Sprintf("lat-%d", i)
		var u unstructured.Unstructured
		if err := yamlObject(cloudJobYAML(name, "0 0 3 * * ?"), &u); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := dyn.Resource(gvr).Namespace(objectNS).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		admitted = append(admitted, time.Since(start))
		deadline := start.Add(waitLong)
		for {
			code, _ := s.api().Do(http.MethodGet, "/api/job/jobs/"+name, nil)
			if code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not registered within %v", name, waitLong)
			}
			time.Sleep(2 * time.Millisecond)
		}
		took = append(took, time.Since(start))
		// Beside it, the API server's own create of an object no webhook checks.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: objectNS}, Data: map[string]string{"cron": "0 0 3 * * ?"}}
		began := time.Now()
		if _, err := admin.CoreV1().ConfigMaps(objectNS).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bare = append(bare, time.Since(began))
		_ = admin.CoreV1().ConfigMaps(objectNS).Delete(context.Background(), name, metav1.DeleteOptions{})
		if err := dyn.Resource(gvr).Namespace(objectNS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The scheduler's own part: its checks and registry writes (the reconciler logs them).
	var own []time.Duration
	for _, m := range regexp.MustCompile(`name=lat-\d+ generation=\d+ took=(\S+)`).FindAllStringSubmatch(s.Log(), -1) {
		if d, err := time.ParseDuration(m[1]); err == nil {
			own = append(own, d)
		}
	}
	if len(own) < n {
		t.Fatalf("the reconciler logged %d of the %d registrations", len(own), n)
	}
	for what, d := range map[string][]time.Duration{"(a ConfigMap's create, no webhook)": bare, "the reconciler's apply (checks, owner record, registry write)": own, "create returned (admitted by the webhook, stored)": admitted, "registered (served by the REST API)": took} {
		slices.Sort(d)
		t.Logf("apply -> %s, %d CloudJobs: min %v, median %v, p90 %v, max %v", what, n,
			d[0].Round(time.Millisecond), d[n/2].Round(time.Millisecond), d[n*9/10].Round(time.Millisecond), d[n-1].Round(time.Millisecond))
	}
}

// yamlObject reads one object's YAML.
func yamlObject(doc string, u *unstructured.Unstructured) error {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return err
	}
	return u.UnmarshalJSON(j)
}

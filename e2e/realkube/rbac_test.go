//go:build e2e

package realkube

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// TestSchedulerWithItsOwnRights runs the scheduler with the service account token of
// deploy/kubernetes/base/rbac.yaml and nothing more: its informers sync (nodes and pods
// list/watch; events list/watch in the namespace), a job runs (pods create), its log is read
// while it runs (pods get, pods/log get), its pod is deleted once it finished, and a killed
// task's pod goes (pods delete). A verb missing from the manifest fails one of these steps
// (the events: the scheduler logs that it cannot read them, and client-go's "forbidden").
func TestSchedulerWithItsOwnRights(t *testing.T) {
	requireK8s(t)
	const ns = "elasticjob"
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	applyRBAC(t, "../../deploy/kubernetes/base/rbac.yaml")
	if _, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", getOpts); err != nil { // pods of the namespace need it
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	s := startScheduler(t, "scheduler", schedOpts{ns: ns, kubeconfig: tokenKubeconfig(t, ns, "elasticjob-scheduler")})
	eventually(t, waitLong, s.subscribed, "the scheduler's informers to sync with the service account's rights")
	s.publishApp("rec", false)
	s.register(transient("rights", "rec", 1, "sleep 4"))
	s.trigger("rights")
	eventually(t, waitLong, func() bool { return rec.count("rights", "start") == 1 }, "the job to start")
	var task string
	for id := range rec.events("rights") {
		task = id
	}
	eventually(t, waitLong, func() bool {
		code, body := s.api().Do(http.MethodGet, "/api/job/logs/"+task, nil)
		return code == http.StatusOK && strings.Contains(string(body), "of rights runs")
	}, "the running task's log (pods get, pods/log get)")
	eventually(t, waitLong, func() bool { return len(s.ended("rights")) == 1 }, "the job to end")
	if e := s.ended("rights")[0]; !e.Success {
		t.Errorf("the job failed: %s", deref(e.FailureCause))
	}
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "rights")) == 0 }, "its pod to be deleted (pods delete)")
	s.register(transient("killed", "rec", 1, "sleep 300"))
	s.trigger("killed")
	eventually(t, waitLong, func() bool { return rec.count("killed", "start") == 1 }, "the second job to start")
	s.must(http.MethodPost, "/api/job/killed/disable", nil)
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "killed")) == 0 }, "the killed task's pod to go")
	for _, word := range []string{"forbidden", "cannot be read"} {
		if strings.Contains(s.Log(), word) {
			t.Errorf("the scheduler was refused a call:\n%s", grep(s.Log(), word))
		}
	}
}

// applyRBAC creates (or replaces) the objects of a manifest.
func applyRBAC(t *testing.T, path string) {
	t.Helper()
	if err := harness.ApplyRBAC(context.Background(), admin, path); err != nil {
		t.Fatal(err)
	}
}

// tokenKubeconfig writes a kubeconfig that authenticates as the service account (a token
// from the TokenRequest API).
func tokenKubeconfig(t *testing.T, ns, sa string) string {
	t.Helper()
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {token: %q}
contexts:
- name: local
  context: {cluster: local, user: %s}
current-context: local
`, rc.Host, rc.TLSClientConfig.CAFile, sa, tr.Status.Token, sa)
	p := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func grep(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

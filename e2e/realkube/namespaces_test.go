//go:build e2e

package realkube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// TestTeamNamespacesOnKubernetes runs two teams on one scheduler (one scheduler for the
// whole test): each team's pods land in its own Kubernetes namespace (kube_namespaces); a
// shard of pay reads a scheduler secret (AES-GCM, fetched by its executor with the task's
// token) and a Kubernetes Secret of pay's Kubernetes namespace (a kubernetesSecret entry of
// its secrets, as env and as a file), and neither value shows in the API or the scheduler's
// log; search's ResourceQuota holds its job
// with a why-waiting reason naming the quota, and the job runs once the quota is raised; a
// namespace whose Kubernetes namespace is missing waits saying so, and runs once it is made.
func TestTeamNamespacesOnKubernetes(t *testing.T) {
	requireK8s(t)
	ctx := context.Background()
	base := namespace(t)
	payNS, searchNS, lateNS := kubeNamespace(t, base+"-pay"), kubeNamespace(t, base+"-search"), base+"-late"
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(ctx, lateNS, metav1.DeleteOptions{}) })
	keyFile := filepath.Join(t.TempDir(), "secrets.key")
	if err := os.WriteFile(keyFile, []byte("k1:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// search's quota leaves 0.04 CPU: its job's shard (0.05 CPU) does not fit.
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("40m"), corev1.ResourceRequestsMemory: resource.MustParse("1Gi")}}}
	if _, err := admin.CoreV1().ResourceQuotas(searchNS).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, "scheduler", schedOpts{ns: base, extra: []string{"--secrets-key-file", keyFile,
		"--kube-namespaces", "pay=" + payNS + ",search=" + searchNS + ",late=" + lateNS}})
	eventually(t, waitLong, s.subscribed, "the scheduler to subscribe")
	for _, ns := range []string{"pay", "search", "late"} {
		s.must(http.MethodPut, "/api/namespaces/"+ns, map[string]any{})
		s.must(http.MethodPost, "/api/app?namespace="+ns, map[string]any{"appName": "rec", "appURL": rec.url + "/app.tgz",
			"bootstrapScript": "bin/run.sh", "cpuCount": 0.05, "memoryMB": 64})
	}
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "rec", "appURL": rec.url + "/app.tgz",
		"bootstrapScript": "bin/run.sh", "cpuCount": 0.05, "memoryMB": 64})

	// The default namespace in kube_namespace, pay in its own.
	s.register(transient("home", "rec", 1, ""))
	s.trigger("home")
	const schedPW, kubePW = "sched-pw-0c1e-Value", "kube-pw-5d2b-Value"
	s.must(http.MethodPut, "/api/namespaces/pay/secrets/db", map[string]any{"value": schedPW})
	if _, err := admin.CoreV1().Secrets(payNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kdb"},
		StringData: map[string]string{"password": kubePW}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hash := func(v string) string { s := sha256.Sum256([]byte(v)); return hex.EncodeToString(s[:]) }
	script := `ev=ok; [ "$(printf %s "$DB_PW" | sha256sum | cut -c1-64)" = "` + hash(schedPW) + `" ] || ev=no-scheduler-secret; ` +
		`[ "$(printf %s "$KDB_PW" | sha256sum | cut -c1-64)" = "` + hash(kubePW) + `" ] || ev=$ev-no-kube-secret; ` +
		`[ "$(cat "$ELASTICJOB_SECRETS_DIR/k/pw" | sha256sum | cut -c1-64)" = "` + hash(kubePW) + `" ] || ev=$ev-no-kube-file; ` +
		`wget -q -O /dev/null --post-data "$ev $ELASTICJOB_TASK_ID" ` + rec.url + `/event; :`
	s.must(http.MethodPost, "/api/job/register?namespace=pay", map[string]any{"jobName": "reads", "appName": "rec",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "cpuCount": 0.05, "memoryMB": 32,
		"jobType": "SCRIPT", "props": map[string]string{"script.command.line": script},
		"secrets": []any{map[string]any{"name": "db", "env": "DB_PW"}, map[string]any{"kubernetesSecret": "kdb", "key": "password", "env": "KDB_PW"},
			map[string]any{"kubernetesSecret": "kdb", "key": "password", "file": "k/pw"}}})
	s.must(http.MethodPost, "/api/job/trigger?namespace=pay", "reads")
	var payPods, homePods int
	eventually(t, waitLong, func() bool {
		payPods, homePods = max(payPods, len(pods(t, payNS, ""))), max(homePods, len(pods(t, base, "")))
		return len(rec.events("pay~reads")) > 0 && rec.count("home", "end") == 1
	}, "pay's run and the default namespace's to report")
	if got := rec.events("pay~reads"); rec.count("pay~reads", "ok") != 1 {
		t.Errorf("pay's shard reported %v, want ok (both secrets read)", got)
	}
	if payPods == 0 || homePods == 0 {
		t.Errorf("pods seen: %d in %s (pay), %d in %s (default)", payPods, payNS, homePods, base)
	}
	eventually(t, waitLong, func() bool { return len(endedIn(s, "pay", "reads")) == 1 }, "pay's run in its history")
	for _, path := range []string{"/api/job/jobs/reads?namespace=pay", "/api/namespaces/pay/secrets", "/api/namespaces/pay/secrets/db",
		"/api/job/logs/" + endedIn(s, "pay", "reads")[0].TaskID + "?namespace=pay"} {
		if body := string(s.must(http.MethodGet, path, nil)); strings.Contains(body, schedPW) || strings.Contains(body, kubePW) {
			t.Errorf("GET %s shows a secret", path)
		}
	}
	if l := s.Log(); strings.Contains(l, schedPW) || strings.Contains(l, kubePW) {
		t.Error("the scheduler's log shows a secret")
	}

	// search is at its ResourceQuota: its job waits, saying so, and no pod is refused.
	s.must(http.MethodPost, "/api/job/register?namespace=search", map[string]any(transient("capped", "rec", 1, "")))
	s.must(http.MethodPost, "/api/job/trigger?namespace=search", "capped")
	var why string
	eventually(t, waitLong, func() bool {
		why = waitingIn(s, "search", "capped")
		return strings.Contains(why, "ResourceQuota compute") && strings.Contains(why, `"rule":"quota"`)
	}, "search's job to wait for its quota")
	t.Logf("waiting: %s", why)
	usage := string(s.must(http.MethodGet, "/api/namespaces/search/usage", nil))
	if !strings.Contains(usage, "compute") {
		t.Errorf("search's usage does not show its quota: %s", usage)
	}
	q, err := admin.CoreV1().ResourceQuotas(searchNS).Get(ctx, "compute", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("1")
	if _, err := admin.CoreV1().ResourceQuotas(searchNS).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, func() bool { return rec.count("search~capped", "end") == 1 }, "search's job to run once its quota is raised")
	for _, tr := range tracesIn(s, "search", "capped") {
		if strings.Contains(tr.Message, "exceeded quota") {
			t.Errorf("a pod was refused by the quota: %+v", tr)
		}
	}

	// late's Kubernetes namespace does not exist: its job waits, saying so; made, it runs.
	s.must(http.MethodPost, "/api/job/register?namespace=late", map[string]any(transient("early", "rec", 1, "")))
	s.must(http.MethodPost, "/api/job/trigger?namespace=late", "early")
	eventually(t, waitLong, func() bool {
		why = waitingIn(s, "late", "early")
		return strings.Contains(why, lateNS+" does not exist")
	}, "late's job to wait for its Kubernetes namespace")
	kubeNamespace(t, lateNS)
	eventually(t, waitLong, func() bool { return rec.count("late~early", "end") == 1 }, "late's job to run once its namespace exists")
}

// kubeNamespace makes a Kubernetes namespace with its default service account, deleted
// (its pods first) at cleanup.
func kubeNamespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if _, err := admin.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = admin.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		harness.Eventually(t, waitLong, pollEvery, func() bool { return len(pods(t, name, "")) == 0 }, "the pods of %s to be gone", name)
		_ = admin.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

func waitingIn(s *scheduler, ns, name string) string {
	var rows []struct {
		JobName string         `json:"jobName"`
		Waiting map[string]any `json:"waiting"`
	}
	decode(s.t, s.must(http.MethodGet, "/api/job/tasks/ready?namespace="+ns, nil), &rows)
	for _, r := range rows {
		if r.JobName == name {
			b, _ := json.Marshal(r.Waiting)
			return string(b)
		}
	}
	return ""
}

func endedIn(s *scheduler, ns, name string) []execution {
	var page struct {
		Rows []execution `json:"rows"`
	}
	decode(s.t, s.must(http.MethodGet, "/api/job/events/executions?per_page=500&namespace="+ns+"&jobName="+name, nil), &page)
	var out []execution
	for _, e := range page.Rows {
		if e.CompleteTime != "" {
			out = append(out, e)
		}
	}
	return out
}

func tracesIn(s *scheduler, ns, name string) []trace {
	var page struct {
		Rows []trace `json:"rows"`
	}
	decode(s.t, s.must(http.MethodGet, "/api/job/events/statusTraces?per_page=500&namespace="+ns+"&jobName="+name, nil), &page)
	return page.Rows
}

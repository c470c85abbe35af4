//go:build e2e

package realkube

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClaimInTeamNamespace: a namespace with a Kubernetes namespace of its own
// (kube_namespaces) runs a job whose podTemplate mounts a PersistentVolumeClaim there (bound
// by the cluster's volume binder to a hostPath volume the test makes): the first run writes a
// file on it, the second, in a new pod, reads it back, and the file is on the volume's
// directory. The scheduler runs as a service account of the default namespace's Kubernetes
// namespace (kube_namespace), as an install does, so that the same template in the default
// namespace is refused with a 400 naming kube_namespace (its claims would be the scheduler's
// own data volume's neighbours): the refusal and the way out the docs give, side by side.
func TestClaimInTeamNamespace(t *testing.T) {
	requireK8s(t)
	startControllers(t) // the volume binder binds the claim; its cleanup, last, deletes the namespaces
	ctx := context.Background()
	home := namespace(t)
	payNS := kubeNamespace(t, home+"-pay")

	// The scheduler's own identity: a service account of home (cluster-admin here: its rights
	// are TestSchedulerWithItsOwnRights's; this test needs only the account's namespace).
	const sa = "ej-claim-scheduler"
	if _, err := admin.CoreV1().ServiceAccounts(home).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: home + "-scheduler"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: home, Name: sa}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}) })

	dir := hostPathVolume(t, home+"-work", payNS, "work")
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: payNS},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new(""), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := admin.CoreV1().PersistentVolumeClaims(payNS).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before its volume's (a bound volume is not deleted) and with the controllers still running
		zero := int64(0)
		_ = admin.CoreV1().Pods(payNS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		if err := admin.CoreV1().PersistentVolumeClaims(payNS).Delete(ctx, "work", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete the claim: %v", err)
		}
		eventually(t, waitLong, func() bool {
			_, err := admin.CoreV1().PersistentVolumeClaims(payNS).Get(ctx, "work", getOpts)
			return apierrors.IsNotFound(err)
		}, "the claim to be deleted")
	})
	eventually(t, waitLong, func() bool {
		c, err := admin.CoreV1().PersistentVolumeClaims(payNS).Get(ctx, "work", getOpts)
		return err == nil && c.Status.Phase == corev1.ClaimBound
	}, "the claim to be bound to its volume")

	s := startScheduler(t, "scheduler", schedOpts{ns: home, kubeconfig: tokenKubeconfig(t, home, sa),
		extra: []string{"--kube-namespaces", "pay=" + payNS}})
	eventually(t, waitLong, s.subscribed, "the scheduler to subscribe")
	s.must(http.MethodPut, "/api/namespaces/pay", map[string]any{})
	for _, q := range []string{"", "?namespace=pay"} {
		s.must(http.MethodPost, "/api/app"+q, map[string]any{"appName": "carry", "bootstrapScript": "run.sh", "cpuCount": 0.05, "memoryMB": 64})
	}
	// The first run finds no mark and writes one; a later run reports what it reads.
	script := `if [ -s /claim/mark ]; then ev="read-$(cat /claim/mark)"; else echo kept > /claim/mark && ev=wrote; fi; ` +
		`wget -q -O /dev/null --post-data "$ev $ELASTICJOB_TASK_ID" ` + rec.url + `/event; :` // ":" takes the sharding context appended as an argument
	carry := map[string]any{"jobName": "carry", "appName": "carry", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 1, "cpuCount": 0.05,
		"memoryMB": 32, "jobType": "SCRIPT", "props": map[string]string{"script.command.line": script},
		"podTemplate": map[string]any{"spec": map[string]any{
			"volumes":    []any{map[string]any{"name": "work", "persistentVolumeClaim": map[string]any{"claimName": "work"}}},
			"containers": []any{map[string]any{"name": "task", "volumeMounts": []any{map[string]any{"name": "work", "mountPath": "/claim"}}}},
		}}}

	// The default namespace's pods run in home, the scheduler's own Kubernetes namespace.
	code, body := s.api().Do(http.MethodPost, "/api/job/register", carry)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "kube_namespace") || !strings.Contains(string(body), "persistentVolumeClaim") {
		t.Errorf("the claim in the scheduler's own Kubernetes namespace: %d %s, want 400 naming the claim and kube_namespace", code, body)
	}

	s.must(http.MethodPost, "/api/job/register?namespace=pay", carry)
	for run := 1; run <= 2; run++ {
		s.must(http.MethodPost, "/api/job/trigger?namespace=pay", "carry")
		eventually(t, waitLong, func() bool { return len(endedIn(s, "pay", "carry")) == run }, "run %d of carry to end", run)
	}
	for _, e := range endedIn(s, "pay", "carry") {
		if !e.Success {
			t.Errorf("run %s failed: %s", e.TaskID, deref(e.FailureCause))
		}
	}
	if w, r := rec.count("pay~carry", "wrote"), rec.count("pay~carry", "read-kept"); w != 1 || r != 1 {
		t.Errorf("the runs reported %v: want one wrote, then one read-kept", rec.events("pay~carry"))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "mark")); err != nil || strings.TrimSpace(string(b)) != "kept" {
		t.Errorf("the volume's directory holds %q (%v), want the mark the first run wrote", b, err)
	}
}

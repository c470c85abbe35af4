package kwokcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SchedulerRights creates the scheduler's service account and rights of deploy/kubernetes/base/rbac.yaml
// (namespace elasticjob) and writes a kubeconfig with a token of that account: the scheduler
// runs with the rights it has in production, and its requests are told apart from every
// other client's at the API server (the flow schema "service-accounts").
func SchedulerRights(ctx context.Context, cs kubernetes.Interface, repo, dir string, apiPort int, ca string) (string, error) {
	if err := harness.ApplyRBAC(ctx, cs, filepath.Join(repo, "deploy/kubernetes/base/rbac.yaml")); err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts("elasticjob").CreateToken(ctx, "elasticjob-scheduler",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: new(int64(4 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of elasticjob-scheduler: %w", err)
	}
	path := filepath.Join(dir, "elasticjob.kubeconfig")
	return path, writeKubeconfig(path, apiPort, ca, "elasticjob-scheduler", "", "", tr.Status.Token)
}

// EnsureNamespace creates a namespace and waits for its default service account (made by
// kube-controller-manager; pods need it).
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("namespace %s: no default service account after 90 s", ns)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

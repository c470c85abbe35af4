package crd

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	admregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WebhookConfigName names the ValidatingWebhookConfiguration.
const WebhookConfigName = "elasticjob.io"

// clientConfig is how the API server reaches the webhook at rawURL: a
// Service reference when its host names a Service (NAME.NAMESPACE.svc, or
// .svc.cluster.local), which the API server resolves itself (its own DNS
// usually cannot resolve cluster names), else the URL as it is.
func clientConfig(rawURL string, caBundle []byte) admregv1.WebhookClientConfig {
	if u, err := url.Parse(rawURL); err == nil {
		host := strings.TrimSuffix(strings.TrimSuffix(u.Hostname(), "."), ".cluster.local")
		if parts := strings.Split(host, "."); len(parts) == 3 && parts[2] == "svc" && parts[0] != "" && parts[1] != "" {
			port := int32(443)
			if p, err := strconv.ParseInt(u.Port(), 10, 32); err == nil {
				port = int32(p)
			}
			path := u.Path
			return admregv1.WebhookClientConfig{CABundle: caBundle,
				Service: &admregv1.ServiceReference{Namespace: parts[1], Name: parts[0], Port: &port, Path: &path}}
		}
	}
	return admregv1.WebhookClientConfig{URL: &rawURL, CABundle: caBundle}
}

// webhookConfig is the configuration that sends the kinds' creates and
// updates to url, trusting caBundle.
func webhookConfig(url string, caBundle []byte) *admregv1.ValidatingWebhookConfiguration {
	fail, none, exact := admregv1.Fail, admregv1.SideEffectClassNone, admregv1.Equivalent
	timeout := int32(10)
	var resources []string
	for _, k := range Kinds {
		resources = append(resources, k.Resource)
	}
	scope := admregv1.NamespacedScope
	return &admregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigName, Labels: map[string]string{"app.kubernetes.io/managed-by": "elasticjob"}},
		Webhooks: []admregv1.ValidatingWebhook{{
			Name:                    "definitions.elasticjob.io",
			ClientConfig:            clientConfig(url, caBundle),
			Rules:                   []admregv1.RuleWithOperations{{Operations: []admregv1.OperationType{admregv1.Create, admregv1.Update}, Rule: admregv1.Rule{APIGroups: []string{Group}, APIVersions: []string{Version}, Resources: resources, Scope: &scope}}},
			FailurePolicy:           &fail,
			MatchPolicy:             &exact,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// Register creates or updates the ValidatingWebhookConfiguration so the
// API server calls url and trusts caBundle; one already so is left alone.
func Register(ctx context.Context, cs kubernetes.Interface, url string, caBundle []byte) error {
	want := webhookConfig(url, caBundle)
	api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cur, err := api.Get(ctx, WebhookConfigName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err = api.Create(ctx, want, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			return Register(ctx, cs, url, caBundle) // another scheduler made it meanwhile
		}
	} else if err == nil && !sameWebhook(cur, want) {
		want.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("register webhook %s: %w", WebhookConfigName, err)
	}
	return nil
}

// sameWebhook reports whether cur sends to the same URL or Service with the
// same CA and rules as want.
func sameWebhook(cur, want *admregv1.ValidatingWebhookConfiguration) bool {
	if len(cur.Webhooks) != 1 {
		return false
	}
	c, w := cur.Webhooks[0], want.Webhooks[0]
	return c.Name == w.Name && reflect.DeepEqual(c.ClientConfig, w.ClientConfig) &&
		reflect.DeepEqual(c.Rules, w.Rules) && c.FailurePolicy != nil && *c.FailurePolicy == *w.FailurePolicy
}

package crd

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const jobSpec = `{"jobExecutionType":"TRANSIENT","jobType":"HTTP","cron":"%s","shardingTotalCount":1,
 "cpuCount":0.1,"memoryMB":32,"props":{"http.url":"http://127.0.0.1:1/x"}}`

func review(t *testing.T, h http.Handler, op admissionv1.Operation, resource, ns, name, spec string) *admissionv1.AdmissionResponse {
	t.Helper()
	obj := `{"apiVersion":"elasticjob.io/v1","kind":"CloudJob","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":` + spec + `}`
	rv := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u-1", Operation: op, Namespace: ns, Name: name,
			Resource: metav1.GroupVersionResource{Group: Group, Version: Version, Resource: resource},
			Object:   runtime.RawExtension{Raw: []byte(obj)}}}
	b, _ := json.Marshal(rv)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(b)))
	if w.Code != http.StatusOK {
		t.Fatalf("webhook answered %d: %s", w.Code, w.Body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil || out.Response.UID != "u-1" {
		t.Fatalf("answer %s: %v", w.Body, err)
	}
	return out.Response
}

func TestWebhookRefusesWithTheAPIsMessage(t *testing.T) {
	_, h, srv := newAPI()
	wh := Webhook{Defs: srv, Log: slog.New(slog.DiscardHandler)}
	bad := strings.Replace(jobSpec, "%s", "0 0 25 * * ?", 1)
	resp := review(t, wh, admissionv1.Create, "cloudjobs", "default", "hello", bad)
	// The REST API's answer to the same definition.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/job/register", strings.NewReader(`{"jobName":"hello",`+bad[1:])))
	var apiErr struct{ Message string }
	_ = json.Unmarshal(w.Body.Bytes(), &apiErr)
	if resp.Allowed || resp.Result == nil || resp.Result.Message != apiErr.Message || int(resp.Result.Code) != w.Code {
		t.Fatalf("webhook: %+v; the API: %d %q", resp.Result, w.Code, apiErr.Message)
	}
	if !strings.Contains(apiErr.Message, "0 0 25 * * ?") {
		t.Errorf("the API's message %q does not name the cron", apiErr.Message)
	}
	good := strings.Replace(jobSpec, "%s", "0/30 * * * * ?", 1)
	if r := review(t, wh, admissionv1.Create, "cloudjobs", "default", "hello", good); !r.Allowed {
		t.Errorf("a good job refused: %+v", r.Result)
	}
	if r := review(t, wh, admissionv1.Delete, "cloudjobs", "default", "hello", bad); !r.Allowed {
		t.Error("a delete was refused")
	}
	if r := review(t, wh, admissionv1.Create, "cloudjobs", "default", "hello", `{"cron":"0/30 * * * * ?","unknownField":1}`); r.Allowed {
		t.Error("an unknown field was allowed")
	}
	// Checked only, nothing registered.
	if _, err := srv.StatusOf(context.Background(), api.DefJob, "default", "hello"); err == nil {
		t.Error("the webhook registered the job")
	}
}

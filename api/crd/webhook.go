package crd

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/ejcloud/elasticjob/api"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookPath is where the webhook serves AdmissionReviews.
const WebhookPath = "/validate"

// maxReview bounds an AdmissionReview's body.
const maxReview = 3 << 20

// Webhook answers the API server's AdmissionReviews of the kinds: a
// create or update is allowed exactly when the REST API would register or
// update the definition, refused with the API's own message otherwise
// (the API's Warning headers become admission warnings). A delete is
// always allowed: the reconciler deregisters the definition.
type Webhook struct {
	Defs       Definitions
	Namespaces NamespaceOf
	Log        *slog.Logger
}

// object is what the webhook reads of an object.
type object struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

func (w Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReview))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := w.review(r, review.Request)
	resp.UID = review.Request.UID
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

// review decides one request.
func (w Webhook) review(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	k, ok := kindOf(req.Resource.Resource)
	if !ok || req.Resource.Group != Group || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return allow
	}
	if req.SubResource != "" { // status writes are the reconciler's
		return allow
	}
	var obj object
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return refuse(http.StatusBadRequest, "cannot read the object: "+err.Error())
	}
	name, ns := obj.Metadata.Name, req.Namespace
	if name == "" {
		name = req.Name
	}
	sns, err := w.Namespaces.of(ns)
	if err != nil {
		return refuse(http.StatusBadRequest, err.Error())
	}
	warns, err := w.Defs.CheckDefinition(r.Context(), k.Def, sns, name, obj.Spec)
	if err != nil {
		code, msg := api.ErrorMessage(err)
		if code >= 500 && w.Log != nil {
			w.Log.Warn("webhook: cannot check", "kind", k.Name, "namespace", ns, "name", name, "err", err)
		}
		return refuse(int32(code), msg)
	}
	allow.Warnings = warns
	return allow
}

func refuse(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure, Code: code, Message: msg}}
}

package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
)

// fakeTemplates records the podTemplate checks and refuses templates naming "missing".
type fakeTemplates struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeTemplates) Check(_ context.Context, _ string, a app.Config, j *jobs.Config) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	call, tmpl := a.AppName, string(a.PodTemplate)
	if j != nil {
		call, tmpl = a.AppName+"/"+j.JobName, tmpl+string(j.PodTemplate)
	}
	f.calls = append(f.calls, call)
	if strings.Contains(tmpl, "missing") {
		return fmt.Errorf("%w: the Kubernetes API server refused the pod it would make (dry run in namespace ns): no PriorityClass with name missing was found", api.ErrBadRequest)
	}
	return nil
}

func (f *fakeTemplates) Calls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, " ")
}

const tmplApp = `{"spec":{"serviceAccountName":"pay","containers":[{"name":"task","env":[{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"name":"pay-db","key":"password"}}}]}]}}`

func withBody(body, field, value string) string {
	return strings.TrimSuffix(body, "}") + `,"` + field + `":` + value + `}`
}

// TestPodTemplateOnMesos: without the Kubernetes engine a podTemplate is refused with the
// reason, for apps, jobs and the guide's register; nothing is stored.
func TestPodTemplateOnMesos(t *testing.T) {
	e := newEnv(t)
	e.wantError(e.request(http.MethodPost, "/api/app", withBody(appBody("app"), "podTemplate", tmplApp)), http.StatusBadRequest,
		"podTemplate is for the Kubernetes engine", "Mesos")
	e.must(http.StatusNotFound, http.MethodGet, "/api/app/app", "")
	e.must(http.StatusOK, http.MethodPost, "/api/app", withBody(appBody("app"), "podTemplate", "null"))
	e.wantError(e.request(http.MethodPost, "/api/job/register", withBody(jobBody("j", "app"), "podTemplate", tmplApp)), http.StatusBadRequest,
		"podTemplate is for the Kubernetes engine")
	e.must(http.StatusNotFound, http.MethodGet, "/api/job/jobs/j", "")
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("j", "app"))
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"j","podTemplate":`+tmplApp+`}`), http.StatusBadRequest,
		"podTemplate is for the Kubernetes engine")
	e.wantError(e.request(http.MethodPost, "/api/app", withBody(appBody("other"), "podTemplate", `[1]`)), http.StatusBadRequest,
		"podTemplate must be an object")
}

// TestPodTemplateOnKubernetes: templates are checked (the app alone, the job over its app,
// the app again with each job that has one), kept as given, refused with the cluster's
// reason, and cleared by null.
func TestPodTemplateOnKubernetes(t *testing.T) {
	f := &fakeTemplates{}
	e := newEnv(t, func(o *api.Options, _ *api.Credentials) { o.Apps.PodTemplates = f })
	e.must(http.StatusOK, http.MethodPost, "/api/app", withBody(appBody("app"), "podTemplate", tmplApp))
	got := decode[map[string]json.RawMessage](t, e.must(http.StatusOK, http.MethodGet, "/api/app/app", ""))
	if string(got["podTemplate"]) != tmplApp {
		t.Errorf("podTemplate kept as %s", got["podTemplate"])
	}
	jobT := `{"spec":{"priorityClassName":"batch"}}`
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", withBody(jobBody("j", "app"), "podTemplate", jobT))
	e.wantError(e.request(http.MethodPost, "/api/job/register", withBody(jobBody("k", "app"), "podTemplate", `{"spec":{"priorityClassName":"missing"}}`)),
		http.StatusBadRequest, "no PriorityClass with name missing was found")
	e.must(http.StatusNotFound, http.MethodGet, "/api/job/jobs/k", "")
	e.must(http.StatusOK, http.MethodPut, "/api/app", `{"appName":"app","appCacheEnable":false}`)
	if c := f.Calls(); c != "app app/j app/k app app/j" {
		t.Errorf("checks: %s", c)
	}
	e.wantError(e.request(http.MethodPut, "/api/app", `{"appName":"app","podTemplate":{"spec":{"priorityClassName":"missing"}}}`),
		http.StatusBadRequest, "no PriorityClass")
	e.must(http.StatusOK, http.MethodPut, "/api/job/update", `{"jobName":"j","podTemplate":null}`)
	job := decode[map[string]json.RawMessage](t, e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/j", ""))
	if _, ok := job["podTemplate"]; ok {
		t.Errorf("podTemplate not cleared: %s", job["podTemplate"])
	}
}

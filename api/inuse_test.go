package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// TestDeleteWhatAWorkflowUses: deregistering a job, or deleting an app, that
// a workflow runs used to succeed silently and the workflow failed at its
// next run. It is a 409 naming the workflows and their nodes, and nothing
// is deleted; ?force=true deletes anyway and the 200 answer names what
// broke; what no workflow uses is deleted with 204 as before.
func TestDeleteWhatAWorkflowUses(t *testing.T) {
	e := seedWorkflowEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("other", "app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("spare", "app"))
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", wfBody("etl"))
	e.must(http.StatusOK, http.MethodPost, "/api/workflow", `{"name":"nightly","nodes":[{"id":"x","job":"other"}]}`)

	const jobUse = "job 'job' is used by workflow etl (nodes extract, clean, alert: job job)"
	e.wantError(e.request(http.MethodDelete, "/api/job/job/deregister", ""), http.StatusConflict, jobUse, "?force=true")
	e.wantError(e.request(http.MethodDelete, "/api/job/deregister", "job"), http.StatusConflict, jobUse)
	e.wantError(e.request(http.MethodDelete, "/api/app/app", ""), http.StatusConflict,
		"app 'app' (whose jobs are deleted with it) is used by workflow etl (nodes extract, clean, alert: job job), workflow nightly (node x: job other)")
	e.wantError(e.request(http.MethodDelete, "/api/job/job/deregister?force=maybe", ""), http.StatusBadRequest, "force must be true or false")
	ctx := context.Background()
	for _, j := range []string{"job", "other", "spare"} {
		if _, err := e.reg.Config().Job(ctx, j); err != nil {
			t.Fatalf("a refused delete removed job %s: %v", j, err)
		}
	}
	if _, err := e.reg.Config().App(ctx, "app"); err != nil {
		t.Fatalf("a refused delete removed the app: %v", err)
	}

	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/spare/deregister?force=true", "") // no workflow runs it
	forced := decode[api.ForcedDelete](t, e.must(http.StatusOK, http.MethodDelete, "/api/job/job/deregister?force=true", ""))
	if len(forced.Workflows) != 1 || forced.Workflows[0].Workflow != "etl" || forced.Message !=
		"Job 'job' was deleted although workflow etl (nodes extract, clean, alert: job job) ran it: their next runs fail until they are updated" {
		t.Fatalf("forced deregistration answered %+v", forced)
	}
	if _, err := e.reg.Config().Job(ctx, "job"); err == nil {
		t.Fatal("the forced deregistration left the job")
	}
	e.wantError(e.request(http.MethodDelete, "/api/app/app", ""), http.StatusConflict, "workflow nightly (node x: job other)")
	forced = decode[api.ForcedDelete](t, e.must(http.StatusOK, http.MethodDelete, "/api/app/app?force=true", ""))
	if len(forced.Workflows) != 1 || forced.Workflows[0].Workflow != "nightly" {
		t.Fatalf("forced app deletion answered %+v", forced)
	}
	// An app no workflow uses goes with a 204, as before.
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("lonely"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("alone", "lonely"))
	e.must(http.StatusNoContent, http.MethodDelete, "/api/app/lonely", "")
}

package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// POST /api/job/{jobName}/kill stops one run, says who (the user, through
// the console here), and keeps the job; the scheduler's refusals keep
// their codes; a guest may not.
func TestKillRun(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	e.user, e.pass = "root", "s3cret"
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("my_job", "app"))
	r := e.request(http.MethodPost, "/api/job/my_job/kill", "", api.ClientHeader, "console")
	got := decode[map[string]any](t, r)
	if r.Code != http.StatusOK || got["killedBy"] != "console:root" || got["droppedShards"] != 1.0 {
		t.Fatalf("kill: %d %v", r.Code, got)
	}
	if len(e.ops.kills) != 1 || e.ops.kills[0] != "my_job by console:root" {
		t.Fatalf("asked the scheduler: %v", e.ops.kills)
	}
	e.ops.killErr = fmt.Errorf("%w: job 'my_job' has no running execution to stop", api.ErrConflict)
	e.wantError(e.request(http.MethodPost, "/api/job/my_job/kill", ""), http.StatusConflict, "has no running execution")
	e.wantError(e.request(http.MethodPost, "/api/job/nope/kill", ""), http.StatusNotFound)
	e.user, e.pass = "guest", "peek"
	e.wantError(e.request(http.MethodPost, "/api/job/my_job/kill", ""), http.StatusForbidden)
}

package api_test

import (
	"net/http"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// A trigger records who sent it and through what (issue 42): the API's
// user, the console's and ejctl's (X-EJ-Client), "anonymous" with open
// access; history shows it as triggeredBy.
func TestTriggerRecordsWhoAndThrough(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	e.user, e.pass = "root", "s3cret"
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	body := `{"jobName":"t_job","appName":"app","cron":"0 0/10 * * * ?","shardingTotalCount":1,"cpuCount":0.5,"memoryMB":32,"misfire":true}`
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", body)
	if r := e.request(http.MethodPost, "/api/job/trigger", "t_job", api.ClientHeader, "console"); r.Code != http.StatusNoContent {
		t.Fatalf("console trigger: %d %s", r.Code, r)
	}
	if r := e.request(http.MethodPost, "/api/job/trigger", `{"jobName":"t_job","jobParameter":"x"}`, api.ClientHeader, "ejctl"); r.Code != http.StatusOK {
		t.Fatalf("ejctl trigger: %d %s", r.Code, r)
	}
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "t_job")
	rd, ok, err := e.reg.Work().ReadyOf(t.Context(), "t_job")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if len(rd.Runs) != 1 || rd.Runs[0].By != "ejctl:root" {
		t.Errorf("the run with a parameter: %+v", rd.Runs)
	}
	if len(rd.PlainBy) != 2 || rd.PlainBy[0].By != "console:root" || rd.PlainBy[1].By != "api:root" {
		t.Errorf("plain executions: %+v", rd.PlainBy)
	}
}

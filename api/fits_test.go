package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// TestRegistrationRefusesShardsThatNeverFit: a shard larger than the
// largest agent is a 400 that says so; an execution larger than the whole
// cluster is accepted with a Warning; without known agents nothing is
// checked.
func TestRegistrationRefusesShardsThatNeverFit(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"unchecked","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":64,"memoryMB":32}`)
	e.ops.capacity = api.Capacity{Agents: 1, LargestCPUs: 2, LargestMem: 4096, TotalCPUs: 2, TotalMem: 4096}
	r := e.request(http.MethodPost, "/api/job/register",
		`{"jobName":"huge","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":64,"memoryMB":32}`)
	e.wantError(r, http.StatusBadRequest, "64 CPUs", "largest of the 1 agents has 2 CPUs", "could never launch")
	r = e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"wide","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":10,"cpuCount":0.5,"memoryMB":32}`)
	if w := r.Header.Get("Warning"); !strings.Contains(w, "10 shards") || !strings.Contains(w, "5 CPUs") {
		t.Fatalf("Warning = %q, want the gang's total against the cluster's", w)
	}
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"wide","cpuCount":3}`), http.StatusBadRequest, "could never launch")
}

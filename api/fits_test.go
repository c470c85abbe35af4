package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/queue"
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
	e.ops.agents = []engine.Agent{{ID: "a1", CPUs: 2, MemMB: 4096}}
	r := e.request(http.MethodPost, "/api/job/register",
		`{"jobName":"huge","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":64,"memoryMB":32}`)
	e.wantError(r, http.StatusBadRequest, "could never launch", "a shard needs 65 CPUs", "1 CPU and 128 MB for the app's executor", "more than any agent has", "the cluster has 2 CPUs and 4096 MB")
	r = e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"wide","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":10,"cpuCount":0.5,"memoryMB":32}`)
	if w := r.Header.Get("Warning"); !strings.Contains(w, "10 shards") || !strings.Contains(w, "5 CPUs") || !strings.Contains(w, "for the app's executor") {
		t.Fatalf("Warning = %q, want the gang's total against the cluster's", w)
	}
	// The newcomer: 2 shards of the default 1 CPU on a 2-CPU
	// machine need 3 CPUs with this app's executor (1 CPU).
	r = e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"first","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":2,"cpuCount":1,"memoryMB":32}`)
	if w := r.Header.Get("Warning"); !strings.Contains(w, "it needs 3 CPUs") || !strings.Contains(w, "2 CPUs and 64 MB for the 2 shards, 1 CPU and 128 MB for the app's executor") {
		t.Fatalf("Warning = %q, want the executor's share counted", w)
	}
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"wide","cpuCount":3}`), http.StatusBadRequest, "could never launch")
}

// TestQueuesSayWhyTheyWait: the ready and failover views carry the reason
// the leader recorded for an entry that has not launched.
func TestQueuesSayWhyTheyWait(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("slow", "app"))
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "slow")
	w := queue.Wait{Reason: queue.WaitCPU, Message: "not enough CPU: a shard needs 64 CPUs", Since: t0}
	if err := e.reg.Change().Wait(queue.WaitKey(false, "slow", 0), w).Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := decode[[]struct {
		JobName string      `json:"jobName"`
		Waiting *queue.Wait `json:"waiting"`
	}](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	if len(rows) != 1 || rows[0].Waiting == nil || rows[0].Waiting.Reason != queue.WaitCPU || !strings.Contains(rows[0].Waiting.Message, "64 CPUs") {
		t.Fatalf("ready view %+v", rows)
	}
}

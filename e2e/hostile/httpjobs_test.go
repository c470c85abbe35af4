//go:build e2e

package hostile

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// search's HTTP jobs (no app: no code of its own, only the responses of
// an endpoint it picks) write 16 MB each into the sandbox of the executor
// that runs them, past the sandbox's disk limit. The disk watcher stops
// that executor: it must be search's, never one that runs pay's HTTP
// request, which stays open throughout.
func TestHostileHTTPOutputStopsNoOtherTeamsRun(t *testing.T) {
	const diskMB = 40
	w := newWorld(t, 11, "--sandbox-disk-mb", fmt.Sprint(diskMB), "--executor-idle-timeout", "10m")
	release := make(chan struct{})
	var payHit, payCut atomic.Bool
	big := bytes.Repeat([]byte("search's response "), (16<<20)/18+1)[:16<<20]
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pay":
			payHit.Store(true)
			rw.WriteHeader(http.StatusOK)
			rw.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				payCut.Store(true)
			case <-release:
			}
		case "/big":
			_, _ = rw.Write(big)
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })

	httpJob := func(name, url string, shards int) map[string]any {
		return map[string]any{"jobName": name, "jobType": "HTTP", "jobExecutionType": "TRANSIENT", "cron": "0 0 0 1 1 ? 2099",
			"shardingTotalCount": shards, "cpuCount": 0.01, "memoryMB": 8,
			"props": map[string]string{"http.url": url, "http.read.timeout.milliseconds": "600000"}}
	}
	w.admin.Must(http.MethodPost, "/api/job/register?namespace=pay", httpJob("payping", srv.URL+"/pay", 1))
	w.admin.Must(http.MethodPost, "/api/job/trigger?namespace=pay", "payping")
	harness.Eventually(t, waitLong, pollEvery, payHit.Load, "pay's HTTP request to reach its endpoint")

	w.search.Must(http.MethodPost, "/api/job/register?namespace=search", httpJob("bulk", srv.URL+"/big", 4))
	w.search.Must(http.MethodPost, "/api/job/trigger?namespace=search", "bulk")
	var killed string
	harness.Eventually(t, 3*waitLong, pollEvery, func() bool {
		for _, l := range strings.Split(w.sched.Log(), "\n") {
			if strings.Contains(l, "executor killed for its sandbox's disk") {
				killed = l
				return true
			}
		}
		return payCut.Load()
	}, "an executor to be stopped at its %d MB disk limit", diskMB)
	// A killed executor's connections close at once; give pay's a moment.
	harness.Poll(2*time.Second, pollEvery, payCut.Load)
	if payCut.Load() {
		t.Errorf("CROSSED: pay's HTTP request was cut when search's responses filled the sandbox: %s", killed)
	}
	if !strings.Contains(killed, "search~elasticjob-http@-@") {
		t.Errorf("the executor stopped for the disk is not search's own: %s", killed)
	}
}

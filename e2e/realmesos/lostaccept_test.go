//go:build e2e

package realmesos

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// lostAnswerProxy forwards the scheduler API to the master; the first
// ACCEPT that launches a task of job reaches the master, but the scheduler
// gets a 503 for it, as when the answer is lost on the way back.
func lostAnswerProxy(t *testing.T, master, job string, lost *atomic.Int32) string {
	t.Helper()
	target, err := url.Parse(master)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.FlushInterval = -1 // the subscription is a stream
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || !strings.HasSuffix(r.URL.Path, "/api/v1/scheduler") {
			p.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if !bytes.Contains(body, []byte(`"ACCEPT"`)) || !bytes.Contains(body, []byte(`"`+job+`@-@`)) || !lost.CompareAndSwap(0, 1) {
			p.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		if rec.Code/100 != 2 {
			t.Errorf("the ACCEPT whose answer is lost was refused by the master: %d %s", rec.Code, rec.Body)
		}
		http.Error(w, "the answer was lost", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLostAcceptAnswerRunsTheFireOnce: a scheduler on real Mesos 1.11 whose
// ACCEPT reached the master but whose answer was lost rolls the launch
// back and launches it again under the same task ids; the master refuses
// the second launch ("Task has duplicate ID") while the first runs, so
// each shard of the fire runs once, under the id it was first given.
func TestLostAcceptAnswerRunsTheFireOnce(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	var lost atomic.Int32
	s := startSchedulers(t, 1, schedOpts{mesosURL: lostAnswerProxy(t, m.masterURL(), "lost_answer", &lost), name: "ej-lost"})[0]
	s.publishApp("recorder", recorderURL(), "bin/slow.sh")
	out := outDir(t)
	s.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "lost_answer", "appName": "recorder",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 2, "shardingItemParameters": "0=6,1=6",
		"jobParameter": out, "cpuCount": 0.1, "memoryMB": 32})
	s.trigger("lost_answer")
	eventually(t, waitLong, func() bool { return len(slowLines(t, out, "end")) == 2 }, "both shards to run to their end")
	eventually(t, waitLong, func() bool {
		n := 0
		for _, e := range s.executions("lost_answer") {
			if e.Success && e.CompleteTime != "" {
				n++
			}
		}
		return n == 2
	}, "history to record both runs as finished")
	if lost.Load() != 1 {
		t.Fatal("no ACCEPT of the job had its answer lost")
	}
	if !strings.Contains(s.Log(), "launcher: accept") {
		t.Fatal("the scheduler did not see its ACCEPT fail")
	}
	if !strings.Contains(m.masterLog(), "Task has duplicate ID") {
		t.Fatal("the master refused no second launch: the relaunch did not carry the first launch's ids")
	}
	started, ended := slowLines(t, out, "start"), slowLines(t, out, "end")
	if len(started) != 2 || !slices.Equal(slices.Sorted(slices.Values(started)), slices.Sorted(slices.Values(ended))) {
		t.Fatalf("runs started %v and ended %v, want each shard once", started, ended)
	}
}

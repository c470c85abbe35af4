package ejctl

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// --wait prints each shard's failure with its cause as it happens and
// ends (exit 3) as soon as the run cannot succeed, though a shard still
// runs: it used to wait out --timeout (exit 4) on a failover job.
func TestWaitEndsWhenTheRunCannotSucceed(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/job/trigger":
			_, _ = w.Write([]byte(`{"jobName":"fo","queued":true,"duplicate":false}`))
		case strings.HasPrefix(r.URL.Path, "/api/job/trigger/"):
			running := `[{"shardingItem":0,"taskId":"t0","state":"TASK_RUNNING"},{"shardingItem":1,"taskId":"t1","state":"TASK_RUNNING"}]`
			state, shards := "RUNNING", `[]`
			if polls.Add(1) > 1 {
				running = `[{"shardingItem":1,"taskId":"t1","state":"TASK_RUNNING"}]`
				state = "FAILED"
				shards = `[{"shardingItem":0,"taskId":"t0","state":"TASK_FAILED","message":"fetch http://127.0.0.1:1/app.tgz: connection refused"}]`
			}
			_, _ = w.Write([]byte(`{"idempotencyKey":"k","jobName":"fo","state":"` + state + `","message":"shard 0 failed","running":` + running + `,"shards":` + shards + `}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errs, code := runWith(t, map[string]string{"EJCTL_ADDR": srv.URL}, "job", "trigger", "fo", "--wait", "--key", "k", "--poll", "5ms", "--timeout", "1m")
	if code != ExitRunFail {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitRunFail, errs)
	}
	has(t, "stderr", errs, "run k: shard 0 TASK_FAILED (task t0): fetch http://127.0.0.1:1/app.tgz: connection refused",
		"run k: FAILED (1 shard(s) running)", "run k of job fo failed: 1 of 2 shards failed; 1 still running (the run cannot succeed, so ejctl stops waiting)")
	has(t, "stdout", out, "TASK_FAILED", "connection refused")
}

// --wait on a run that can never start (never_fits: larger than the
// whole cluster) stops at the first answer that says so, with the reason
// and its own exit code, instead of waiting out --timeout at QUEUED.
func TestWaitStopsWhenTheRunCanNeverFit(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/job/trigger":
			_, _ = w.Write([]byte(`{"jobName":"huge","queued":true,"duplicate":false}`))
		case strings.HasPrefix(r.URL.Path, "/api/job/trigger/"):
			waiting := `{"reason":"no_offers","message":"no offers yet","since":"2026-11-25T00:00:00Z"}`
			if polls.Add(1) > 1 {
				waiting = `{"reason":"never_fits","message":"needs 64 CPUs, more than any agent has (8)","since":"2026-11-25T00:00:00Z"}`
			}
			_, _ = w.Write([]byte(`{"idempotencyKey":"k","jobName":"huge","state":"QUEUED","running":[],"shards":[],"waiting":` + waiting + `}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, errs, code := runWith(t, map[string]string{"EJCTL_ADDR": srv.URL}, "job", "trigger", "huge", "--wait", "--key", "k", "--poll", "1ms", "--timeout", "10m")
	if code != ExitNeverFits {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitNeverFits, errs)
	}
	has(t, "stderr", errs, "run k: QUEUED: waiting (no_offers): no offers yet",
		"run k of job huge can never start (never_fits): needs 64 CPUs, more than any agent has (8)")
}

// job kill asks on a terminal, needs --yes without one, and says what
// was stopped.
func TestJobKill(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/job/nightly/kill" {
			http.NotFound(w, r)
			return
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobName":"nightly","killedBy":"ejctl:root","taskIds":["t0","t1"],"droppedShards":1}`))
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL}
	// A refusal that says what to do: no pointer to --help after it.
	if _, errs, code := runWith(t, env, "job", "kill", "nightly"); code != ExitUsage || !strings.Contains(errs, "pass --yes") || strings.Contains(errs, "ejctl --help") || posts.Load() != 0 {
		t.Fatalf("without a terminal: exit %d %q, %d posts", code, errs, posts.Load())
	}
	out, errs, code := runWith(t, env, "job", "kill", "nightly", "--yes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	has(t, "kill", out, "job nightly: stopped its running execution (2 task(s) killed, 1 shard(s) waiting to run again dropped), as ejctl:root")
}

// The counts of a failed run agree with each other (issue 57 item 7: "1
// of 1 shard(s) did not finish … (2 shard(s) still running)" for a
// 2-shard failover job whose failed shard ran again).
func TestShardCounts(t *testing.T) {
	var v runView
	v.Shards = append(v.Shards, struct {
		ShardingItem int    `json:"shardingItem"`
		TaskID       string `json:"taskId"`
		State        string `json:"state"`
		Message      string `json:"message"`
	}{ShardingItem: 0, TaskID: "t0", State: "TASK_FAILED"})
	type run = struct {
		ShardingItem int    `json:"shardingItem"`
		TaskID       string `json:"taskId"`
		State        string `json:"state"`
	}
	v.Running = []run{{ShardingItem: 0, TaskID: "t0b", State: "TASK_RUNNING"}, {ShardingItem: 1, TaskID: "t1", State: "TASK_RUNNING"}}
	if got, want := shardCounts(v), "1 of 2 shards failed; 1 still running; 1 failed one is running again by failover (the run cannot succeed, so ejctl stops waiting)"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	v.Running = nil
	if got, want := shardCounts(v), "1 of 1 shard failed"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

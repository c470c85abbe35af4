//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 42, for real: ejctl job trigger --wait on a failover job whose app
// cannot be fetched reports each shard's failure with its cause and ends
// (exit 3) as soon as the run cannot succeed, instead of waiting out its
// timeout; and the failed task's log says the fetch error that ended it.
func TestWaitOnAFailoverJobThatCannotFetch(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.publishApp("far_app", unreachableURL, "bin/record.sh", true)
	j := recorderJob("far_fo", "far_app", outDir(t), 2)
	j.Failover = true
	s.registerJob(j)
	e := newEjctl(t, s)
	out, errs, code := e.run("", "job", "trigger", "far_fo", "--wait", "--timeout", "3m", "--poll", "200ms")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (the run failed)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "TASK_FAILED (task far_fo@-@") || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("no shard failure with its cause on stderr:\n%s", errs)
	}
	// The failed task's log: the fetch error, not "the sandbox may have been removed".
	var failed string
	eventually(t, waitLong, func() bool {
		for _, x := range s.executions("far_fo") {
			if !x.Success && x.FailureCause != nil {
				failed = x.TaskID
				return true
			}
		}
		return false
	}, "a failed execution of far_fo in history")
	code2, body := s.do(http.MethodGet, "/api/job/logs/"+failed+"?format=json", nil)
	var msg struct{ Message string }
	_ = json.Unmarshal(body, &msg)
	if code2 != http.StatusNotFound || !strings.Contains(msg.Message, "before writing any") || !strings.Contains(msg.Message, "127.0.0.1:1") {
		t.Errorf("log of %s: %d %s", failed, code2, body)
	}
	s.must(http.MethodPost, "/api/job/far_fo/disable", nil) // stop its failover
}

// Stopping one run keeps the job: ejctl job kill kills the running
// execution's shards, history says who stopped them and who triggered the
// run, and the job runs again at the next trigger.
func TestKillOneRunKeepsTheJob(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	s.publishApp("gate_app", fileURL(recorderTGZ), "bin/gate.sh", true)
	s.registerJob(recorderJob("gated", "gate_app", out, 2))
	s.trigger("gated")
	eventually(t, waitLong, func() bool { return len(s.running("gated")) == 2 && countRuns(t, out) == 2 }, "both shards of gated running")
	e := newEjctl(t, s)
	if got := e.must(0, "job", "kill", "gated", "--yes"); !strings.Contains(got, "2 task(s) killed") || !strings.Contains(got, "as ejctl:anonymous") {
		t.Fatalf("kill said: %s", got)
	}
	eventually(t, waitLong, func() bool {
		n := 0
		for _, x := range s.executions("gated") {
			if x.FailureCause != nil && *x.FailureCause == "killed by ejctl:anonymous" {
				n++
			}
		}
		return n == 2 && len(s.running("gated")) == 0
	}, "both shards of gated ended killed by ejctl:anonymous")
	var page struct {
		Rows []struct {
			TriggeredBy string `json:"triggeredBy"`
			Source      string `json:"source"`
		} `json:"rows"`
	}
	s.getJSON("/api/job/events/executions?jobName=gated", &page)
	for _, r := range page.Rows {
		if r.TriggeredBy != "api:anonymous" || r.Source != "NORMAL_TRIGGER" {
			t.Errorf("history row: triggeredBy %q, source %q; want api:anonymous and the original's NORMAL_TRIGGER", r.TriggeredBy, r.Source)
		}
	}
	// The job stays: released, a new trigger runs it to the end.
	if err := os.WriteFile(filepath.Join(out, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.trigger("gated")
	eventually(t, waitLong, func() bool { return countRuns(t, out) == 4 && s.idle("gated") }, "gated to run again after the kill")
}

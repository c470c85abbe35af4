package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/engine"
)

// ReportPath is the scheduler's endpoint for the reports of executors in pods.
const ReportPath = "/executor/v1/report"

// TokenHeader carries the task's token with a report.
const TokenHeader = "X-Elasticjob-Task-Token"

// TaskIDHeader names the report's task (api.TaskIDHeader).
const TaskIDHeader = "X-Elasticjob-Task-Id"

// podReporter sends a pod's reports to the scheduler one after the other, in order, each
// retried (across the scheduler URLs, with backoff) until a scheduler takes it.
type podReporter struct {
	s    PodSettings
	log  *slog.Logger
	hc   *http.Client
	q    chan engine.ExecutorReport
	done chan struct{}
	stop context.CancelFunc
	ctx  context.Context
}

func newPodReporter(s PodSettings, log *slog.Logger) *podReporter {
	ctx, cancel := context.WithCancel(context.Background())
	r := &podReporter{s: s, log: log, hc: &http.Client{Timeout: 15 * time.Second}, q: make(chan engine.ExecutorReport, 1024),
		done: make(chan struct{}), ctx: ctx, stop: cancel}
	go r.run()
	return r
}

// send queues a report (the task id and executor are filled in).
func (r *podReporter) send(rep engine.ExecutorReport) {
	rep.TaskID, rep.ExecutorID, rep.AgentID = r.s.TaskID, r.s.ExecutorID, r.s.Node
	select {
	case r.q <- rep:
	default:
		r.log.Warn("report queue full: a report is dropped", "state", rep.State)
	}
}

// flush waits until every queued report is taken, at most wait; then stops.
func (r *podReporter) flush(wait time.Duration) {
	close(r.q)
	select {
	case <-r.done:
	case <-time.After(wait):
		r.log.Warn("the scheduler did not take the last reports in time; it learns the task's end from the pod's phase", "waited", wait)
		r.stop()
		<-r.done
	}
}

func (r *podReporter) close() {
	r.stop()
}

func (r *podReporter) run() {
	defer close(r.done)
	for rep := range r.q {
		r.deliver(rep)
	}
}

// deliver posts one report until a scheduler answers 2xx, or answers that it never will
// (4xx other than 429), or the reporter is stopped.
func (r *podReporter) deliver(rep engine.ExecutorReport) {
	body, _ := json.Marshal(rep)
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		u := r.s.ReportURLs[attempt%len(r.s.ReportURLs)]
		code, err := r.post(u, body)
		switch {
		case err == nil && code/100 == 2:
			return
		case err == nil && code/100 == 4 && code != http.StatusTooManyRequests:
			r.log.Error("the scheduler refused a report", "url", u, "status", code, "state", rep.State)
			return
		}
		r.log.Warn("report not taken; retrying", "url", u, "status", code, "err", err, "state", rep.State)
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (r *podReporter) post(base string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(r.ctx, http.MethodPost, base+ReportPath, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(TokenHeader, r.s.Token)
	req.Header.Set(TaskIDHeader, r.s.TaskID) // the token is checked before the body is read
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// follower copies what a task writes to its stdout and stderr files to the container's
// own, as it is written, so that the pod's log shows the job's output while it runs.
type follower struct {
	stopc chan struct{}
	wg    sync.WaitGroup
}

// followEvery is how often the task's files are checked for new output.
const followEvery = 100 * time.Millisecond

func startFollowing(dir string, stdout, stderr io.Writer) *follower {
	f := &follower{stopc: make(chan struct{})}
	for name, w := range map[string]io.Writer{"stdout": stdout, "stderr": stderr} {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.follow(filepath.Join(dir, name), w)
		}()
	}
	return f
}

func (f *follower) follow(path string, w io.Writer) {
	var off int64
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		stopping := false
		select {
		case <-f.stopc:
			stopping = true
		case <-t.C:
		}
		off = copyFrom(path, off, w)
		if stopping {
			return
		}
	}
}

// copyFrom copies path's bytes from off to w and returns the new offset.
func copyFrom(path string, off int64, w io.Writer) int64 {
	file, err := os.Open(path)
	if err != nil {
		return off
	}
	defer file.Close()
	if _, err := file.Seek(off, io.SeekStart); err != nil {
		return off
	}
	n, _ := io.Copy(w, file)
	return off + n
}

func (f *follower) stop() {
	close(f.stopc)
	f.wg.Wait()
}

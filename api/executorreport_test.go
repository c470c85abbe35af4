package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

type reportRecorder struct {
	mu  sync.Mutex
	got []engine.ExecutorReport
}

func (r *reportRecorder) Report(_ context.Context, rep engine.ExecutorReport) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rep)
	return nil
}

// TestHostileExecutorReportOfAnotherTask: in a pod the task runs beside
// its executor and can read the token of its own task. A message (a daemon
// run's report) sent with that token but naming another task in its data
// (pay's, from search's pod) is refused, and so is a message that is no
// daemon report; the report of the token's own task goes to the engine.
func TestHostileExecutorReportOfAnotherTask(t *testing.T) {
	rec := &reportRecorder{}
	var auth *api.Auth
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Operate.Executors, auth = rec, o.Auth })
	search := jobs.NewTaskID("search~nightly", 0, jobs.KindReady, "node-1").String()
	post := func(taskID string, data []byte) int {
		body, _ := json.Marshal(engine.ExecutorReport{TaskID: taskID, Data: data})
		req := httptest.NewRequest("POST", api.ExecutorReportPath, strings.NewReader(string(body)))
		req.Header.Set(api.TaskTokenHeader, auth.TaskToken(taskID))
		w := httptest.NewRecorder()
		tn.h.ServeHTTP(w, req)
		return w.Code
	}
	forged := jobs.DaemonReport{Type: jobs.DaemonComplete, TaskID: tn.payTask, Message: "forged"}
	if code := post(search, forged.Marshal()); code != 403 {
		t.Errorf("search's token with a daemon report of pay's task: %d, want 403", code)
	}
	if code := post(search, []byte("not a report")); code != 400 {
		t.Errorf("a message that is no daemon report: %d, want 400", code)
	}
	if len(rec.got) != 0 {
		t.Fatalf("refused reports reached the engine: %+v", rec.got)
	}
	own := jobs.DaemonReport{Type: jobs.DaemonBegin, TaskID: search}
	if code := post(search, own.Marshal()); code != 204 || len(rec.got) != 1 {
		t.Fatalf("search's report of its own task: %d, %d reached the engine", code, len(rec.got))
	}
}

// TestHostileReportBodiesBeforeTheirToken: POST /executor/v1/report
// answers any client (a task's pod is one), and its body, up to the
// request limit, was read into the scheduler's memory before its token
// was checked: a client announcing bodies it never finished, on as many
// connections as it liked, held that much memory on each. A report naming
// its task in X-Elasticjob-Task-Id is refused before its body is read
// when the token is not that task's; reports without the header (an older
// executor's) have at most 16 bodies read at once, 429 past them.
func TestHostileReportBodiesBeforeTheirToken(t *testing.T) {
	rec := &reportRecorder{}
	var auth *api.Auth
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Operate.Executors, auth = rec, o.Auth })
	srv := httptest.NewServer(tn.h)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	search := jobs.NewTaskID("search~nightly", 0, jobs.KindReady, "node-1").String()

	// announce sends a report's headers with a 1 MB body and none of it.
	announce := func(headers string) net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n",
			api.ExecutorReportPath, addr, headers, 1<<20-1)
		return conn
	}
	// answer is the status answered before the body is sent (0: none within wait).
	answer := func(conn net.Conn, wait time.Duration) int {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, h := range map[string]string{
		"a made-up token":            api.TaskIDHeader + ": " + search + "\r\n" + api.TaskTokenHeader + ": ejt1.made-up\r\n",
		"no token":                   api.TaskIDHeader + ": " + search + "\r\n",
		"pay's token, search's task": api.TaskIDHeader + ": " + search + "\r\n" + api.TaskTokenHeader + ": " + auth.TaskToken(tn.payTask) + "\r\n",
	} {
		if code := answer(announce(h), 10*time.Second); code != http.StatusUnauthorized {
			t.Errorf("%s, the body not sent: %d, want 401 before the body", name, code)
		}
	}
	got429 := false
	for i := 0; i < 40 && !got429; i++ {
		got429 = answer(announce(""), 2*time.Second) == http.StatusTooManyRequests
	}
	if !got429 {
		t.Error("40 reports without a task id header, their bodies not sent: none refused 429")
	}

	// A named report whose body is of another task; the executor's own report.
	post := func(named, taskID string) int {
		body, _ := json.Marshal(engine.ExecutorReport{TaskID: taskID, State: "TASK_RUNNING"})
		req := httptest.NewRequest("POST", api.ExecutorReportPath, strings.NewReader(string(body)))
		req.Header.Set(api.TaskTokenHeader, auth.TaskToken(named))
		req.Header.Set(api.TaskIDHeader, named)
		w := httptest.NewRecorder()
		tn.h.ServeHTTP(w, req)
		return w.Code
	}
	if code := post(search, tn.payTask); code != http.StatusUnauthorized {
		t.Errorf("search's named report with a body of pay's task: %d, want 401", code)
	}
	if len(rec.got) != 0 {
		t.Fatalf("refused reports reached the engine: %+v", rec.got)
	}
	if code := post(search, search); code != http.StatusNoContent || len(rec.got) != 1 {
		t.Fatalf("search's own named report: %d, %d reached the engine", code, len(rec.got))
	}
}

package api_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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

package embedded

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// batchCall posts calls as one batch: RecordIO records in protobuf
// (msgType overrides the Message-Content-Type; raw, when set, the body).
func batchCall(t *testing.T, c *Cluster, token, msgType string, raw []byte, calls ...*execpb.Call) (int, string) {
	t.Helper()
	body := raw
	for _, call := range calls {
		b, err := call.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		body = append(strconv.AppendInt(body, int64(len(b)), 10), '\n')
		body = append(body, b...)
	}
	req, _ := http.NewRequest(http.MethodPost, c.URL()+"/api/v1/executor", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/recordio")
	req.Header.Set("Message-Content-Type", msgType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestExecutorBatch: an executor's UPDATE and MESSAGE calls in one request
// are applied as each alone would be, in their order; a batch with any
// call that would be refused alone is refused whole, with nothing of it
// applied; the executor's token is checked as for one call.
func TestExecutorBatch(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(),
		taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.25, 32),
		taskInfo(c, "a2", "hang", execInfo(t, "A", "1", 0.1, 32), 0.25, 32),
		taskInfo(c, "b1", "hang", execInfo(t, "B", "1", 0.1, 32), 0.25, 32))
	for range 3 {
		s.ack(s.next(scheduler.Event_UPDATE).Update.Status)
	}
	tokA, tokB := executorToken(t, c, "A"), executorToken(t, c, "B")
	msg := func(exec, data string) *execpb.Call {
		return &execpb.Call{Type: execpb.Call_MESSAGE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
			ExecutorID: mesos.ExecutorID{Value: exec}, Message: &execpb.Call_Message{Data: []byte(data)}}
	}
	pb := "application/x-protobuf"

	refused := []struct {
		name  string
		token string
		mt    string
		raw   string
		calls []*execpb.Call
		want  int
	}{
		{"no token", "", pb, "", []*execpb.Call{updateCall(s.fwID, "B", "b1", mesos.TASK_FINISHED)}, http.StatusUnauthorized},
		{"A's token as B", tokA, pb, "", []*execpb.Call{updateCall(s.fwID, "B", "b1", mesos.TASK_FINISHED)}, http.StatusForbidden},
		{"a valid update beside a TASK_STAGING", tokB, pb, "", []*execpb.Call{updateCall(s.fwID, "B", "b1", mesos.TASK_FINISHED),
			updateCall(s.fwID, "B", "b1", mesos.TASK_STAGING)}, http.StatusBadRequest},
		{"a valid update beside another executor's task", tokB, pb, "", []*execpb.Call{msg("B", "m"),
			updateCall(s.fwID, "B", "a1", mesos.TASK_FINISHED)}, http.StatusForbidden},
		{"calls of two executors", tokB, pb, "", []*execpb.Call{updateCall(s.fwID, "B", "b1", mesos.TASK_FINISHED),
			msg("A", "m")}, http.StatusBadRequest},
		{"a SUBSCRIBE", tokB, pb, "", []*execpb.Call{{Type: execpb.Call_SUBSCRIBE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
			ExecutorID: mesos.ExecutorID{Value: "B"}, Subscribe: &execpb.Call_Subscribe{}}}, http.StatusBadRequest},
		{"no call", tokB, pb, "", nil, http.StatusBadRequest},
		{"a record cut short", tokB, pb, "40\n{}", nil, http.StatusBadRequest},
		{"an unknown message type", tokB, "text/plain", "", []*execpb.Call{msg("B", "m")}, http.StatusUnsupportedMediaType},
	}
	for _, r := range refused {
		if code, body := batchCall(t, c, r.token, r.mt, []byte(r.raw), r.calls...); code != r.want {
			t.Errorf("%s: %d %s, want %d", r.name, code, body, r.want)
		}
	}
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_UPDATE || ev.Type == scheduler.Event_MESSAGE {
			t.Fatalf("a refused batch reached the scheduler: %v", ev)
		}
	}

	// A's batch: two updates and a message between them.
	if code, body := batchCall(t, c, tokA, pb, nil, updateCall(s.fwID, "A", "a1", mesos.TASK_FINISHED), msg("A", "between"),
		updateCall(s.fwID, "A", "a2", mesos.TASK_FAILED)); code != http.StatusAccepted {
		t.Fatalf("A's batch: %d %s", code, body)
	}
	var got []string
	for len(got) < 3 {
		ev := s.nextNot(scheduler.Event_HEARTBEAT, scheduler.Event_OFFERS)
		switch ev.Type {
		case scheduler.Event_UPDATE:
			got = append(got, ev.Update.Status.TaskID.Value+":"+ev.Update.Status.GetState().String())
		case scheduler.Event_MESSAGE:
			got = append(got, "msg:"+string(ev.Message.Data))
		}
	}
	if want := "a1:TASK_FINISHED msg:between a2:TASK_FAILED"; strings.Join(got, " ") != want {
		t.Fatalf("the scheduler got %q, want %q", strings.Join(got, " "), want)
	}
	for _, tk := range c.Snapshot().Tasks {
		if tk.ID == "b1" && tk.State != "TASK_RUNNING" {
			t.Fatalf("b1 is %s after refused batches", tk.State)
		}
	}
}

package executor

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"

	"github.com/ejcloud/elasticjob/executor/fakeagent"
)

// batchAgent records the requests the send loop makes: each a list of
// calls ("t1:TASK_RUNNING", "msg:x"). The first request waits for
// release, so what is queued meanwhile meets in the next one; batchErr
// answers batches.
type batchAgent struct {
	requests chan []string
	entered  chan struct{}
	release  chan struct{}
	batchErr error
}

func newBatchAgent() *batchAgent {
	return &batchAgent{requests: make(chan []string, 16), entered: make(chan struct{}), release: make(chan struct{})}
}

func (a *batchAgent) Subscribe(context.Context, *executor.Call) (Events, error) {
	return nil, errors.New("not used")
}

func (a *batchAgent) Send(_ context.Context, c *executor.Call) error {
	a.first()
	a.requests <- []string{describe(c)}
	return nil
}

func (a *batchAgent) SendBatch(_ context.Context, cs []*executor.Call) error {
	a.first()
	if a.batchErr != nil {
		a.requests <- []string{"refused"}
		return a.batchErr
	}
	var r []string
	for _, c := range cs {
		r = append(r, describe(c))
	}
	a.requests <- r
	return nil
}

func (a *batchAgent) first() {
	if a.entered != nil {
		close(a.entered)
		a.entered = nil
		<-a.release
	}
}

func describe(c *executor.Call) string {
	if c.Type == executor.Call_MESSAGE {
		return "msg:" + string(c.Message.Data)
	}
	return c.Update.Status.TaskID.Value + ":" + c.Update.Status.State.String()
}

// sendThroughGate queues one update, waits until its request is in
// flight, queues the second to fourth calls behind it, lets the first
// through and returns the executor and the requests' record.
func sendThroughGate(t *testing.T, a *batchAgent) *Executor {
	t.Helper()
	e := New(a, nil, Options{ExecutorID: "ex"})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go e.sendLoop(ctx)
	entered := a.entered
	e.update("t1", mesos.TASK_RUNNING, "")
	<-entered
	e.update("t2", mesos.TASK_RUNNING, "")
	e.message([]byte("x"))
	e.update("t1", mesos.TASK_FINISHED, "")
	close(a.release)
	return e
}

// waitLocked waits until cond, called with e.mu held, holds: the agent
// records a request before it answers, so the send loop marks the
// request's updates accepted only after the test has seen the request.
// Each change calls notify, and no run loop reads e.wake in these tests,
// so the test waits on it.
func waitLocked(t *testing.T, e *Executor, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(failsafe)
	for {
		e.mu.Lock()
		ok := cond()
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-e.wake:
		case <-deadline:
			t.Fatal(what)
		}
	}
}

func (a *batchAgent) next(t *testing.T) string {
	t.Helper()
	select {
	case r := <-a.requests:
		return strings.Join(r, " ")
	case <-time.After(failsafe):
		t.Fatal("no request")
		return ""
	}
}

// TestQueuedCallsGoInOneRequest: the calls queued while a request is in
// flight go in the next request, in their order, and each update in it is
// accepted (as a 202 of its own would have made it).
func TestQueuedCallsGoInOneRequest(t *testing.T) {
	a := newBatchAgent()
	e := sendThroughGate(t, a)
	if got := a.next(t); got != "t1:TASK_RUNNING" {
		t.Fatalf("first request %q", got)
	}
	if got := a.next(t); got != "t2:TASK_RUNNING msg:x t1:TASK_FINISHED" {
		t.Fatalf("second request %q, want the three queued calls in order", got)
	}
	waitLocked(t, e, "the batch's updates were not accepted", e.allAcceptedLocked)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.unacked) != 3 || !e.allAcceptedLocked() {
		t.Fatalf("%d unacknowledged, all accepted: %v", len(e.unacked), e.allAcceptedLocked())
	}
}

// TestRefusedBatchGoesOneByOne: an agent that refuses a batch applied none
// of it, so its calls go one by one, in order; one that refuses it as a
// media type it does not know (a Mesos agent, or ours before batches) gets
// no batch again.
func TestRefusedBatchGoesOneByOne(t *testing.T) {
	for _, c := range []struct {
		code      int
		batchesOn bool
	}{{http.StatusBadRequest, true}, {http.StatusUnsupportedMediaType, false}} {
		a := newBatchAgent()
		a.batchErr = &BatchRefused{Code: c.code, Msg: "no"}
		e := sendThroughGate(t, a)
		var got []string
		for range 5 {
			got = append(got, a.next(t))
		}
		if want := "t1:TASK_RUNNING refused t2:TASK_RUNNING msg:x t1:TASK_FINISHED"; strings.Join(got, " ") != want {
			t.Fatalf("%d: requests %q, want %q", c.code, got, want)
		}
		// Two more calls queued together: batched again unless the agent
		// said it takes no batches.
		e.mu.Lock()
		e.updateLocked("t3", mesos.TASK_RUNNING, "")
		e.updateLocked("t4", mesos.TASK_RUNNING, "")
		e.mu.Unlock()
		want := "t3:TASK_RUNNING t4:TASK_RUNNING"
		if c.batchesOn {
			want = "refused t3:TASK_RUNNING t4:TASK_RUNNING"
		}
		got = got[:0]
		for range len(strings.Fields(want)) {
			got = append(got, a.next(t))
		}
		if strings.Join(got, " ") != want {
			t.Fatalf("%d: then %q, want %q", c.code, got, want)
		}
	}
}

// TestBatchNotDeliveredStaysUnacknowledged: a batch that got no answer
// (the agent gone) is not resent call by call: its updates stay
// unacknowledged and not accepted, for the next SUBSCRIBE to carry.
func TestBatchNotDeliveredStaysUnacknowledged(t *testing.T) {
	a := newBatchAgent()
	a.batchErr = errors.New("connection refused")
	e := sendThroughGate(t, a)
	if got := a.next(t) + " " + a.next(t); got != "t1:TASK_RUNNING refused" {
		t.Fatalf("requests %q", got)
	}
	e.update("t5", mesos.TASK_RUNNING, "") // a later call, one on its own
	if got := a.next(t); got != "t5:TASK_RUNNING" {
		t.Fatalf("then %q: the undelivered batch was resent", got)
	}
	waitLocked(t, e, "t5's update was not accepted", func() bool {
		return e.accepted[string(e.unacked[len(e.unacked)-1].Status.UUID)]
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.unacked) != 4 { // the message is not acknowledged: dropped, as Mesos does
		t.Fatalf("%d unacknowledged, want 4", len(e.unacked))
	}
	for _, u := range e.unacked {
		sent := describe(&executor.Call{Type: executor.Call_UPDATE, Update: &u})
		if want := sent == "t1:TASK_RUNNING" || sent == "t5:TASK_RUNNING"; e.accepted[string(u.Status.UUID)] != want {
			t.Fatalf("%s accepted: %v, want %v", sent, !want, want)
		}
	}
}

// TestBatchOverHTTP: the HTTP agent an agent of ours makes sends a batch
// as one POST of RecordIO records in protobuf, with the executor's token.
func TestBatchOverHTTP(t *testing.T) {
	fa := fakeagent.New(false)
	t.Cleanup(fa.Close)
	a := NewHTTPAgent(fa.Endpoint(), "fw", "ex", "tok", true).(BatchAgent)
	st := func(id string) mesos.TaskStatus {
		return mesos.TaskStatus{TaskID: mesos.TaskID{Value: id}, State: mesos.TASK_RUNNING.Enum(), UUID: []byte("0123456789abcdef")}
	}
	err := a.SendBatch(context.Background(), []*executor.Call{
		{Type: executor.Call_UPDATE, Update: &executor.Call_Update{Status: st("t1")}},
		{Type: executor.Call_MESSAGE, Message: &executor.Call_Message{Data: []byte("x")}},
		{Type: executor.Call_UPDATE, Update: &executor.Call_Update{Status: st("t2")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		c := <-fa.Calls
		if c.FrameworkID.Value != "fw" || c.ExecutorID.Value != "ex" {
			t.Fatalf("call of %s/%s", c.FrameworkID.Value, c.ExecutorID.Value)
		}
		got = append(got, describe(c))
	}
	if strings.Join(got, " ") != "t1:TASK_RUNNING msg:x t2:TASK_RUNNING" {
		t.Fatalf("calls %q", got)
	}
	if ct := fa.ContentTypes(); len(ct) != 1 || ct[0] != "application/recordio (application/x-protobuf)" {
		t.Fatalf("requests %q, want one batch", ct)
	}
	if err := a.SendBatch(context.Background(), []*executor.Call{{Type: executor.Call_SUBSCRIBE}}); !errors.As(err, new(*BatchRefused)) {
		t.Fatalf("err = %v, want the agent's refusal", err)
	}
}

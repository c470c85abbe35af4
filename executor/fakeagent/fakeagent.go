package fakeagent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/ejcloud/elasticjob/internal/mesosframe"
	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"
)

// Agent is a running fake agent.
type Agent struct {
	srv *httptest.Server
	// Calls receives every call the executor makes, in arrival order.
	Calls chan *executor.Call

	mu      sync.Mutex
	types   []string             // each call's Content-Type, in arrival order
	stream  chan *executor.Event // current subscription
	hangup  chan struct{}        // closes the current subscription
	closed  bool                 // Close began: no new subscription
	autoAck bool
}

// New starts an agent on 127.0.0.1. With autoAck every UPDATE is answered
// by an ACKNOWLEDGED event on the subscription. It reads calls in JSON or
// protobuf, or several in one request (serveBatch), and streams events in
// the codec the subscription came in.
func New(autoAck bool) *Agent {
	a := &Agent{Calls: make(chan *executor.Call, 1024), autoAck: autoAck}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
}

const (
	typeJSON     = "application/json"
	typeProtobuf = "application/x-protobuf"
	typeRecordIO = "application/recordio"
)

// ContentTypes are the Content-Types of the requests made so far, in
// order; a batch's is "application/recordio (application/x-protobuf)".
func (a *Agent) ContentTypes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.types...)
}

// Endpoint is the value for MESOS_AGENT_ENDPOINT (host:port).
func (a *Agent) Endpoint() string { return strings.TrimPrefix(a.srv.URL, "http://") }

// Close stops the agent and ends its subscription. An executor subscribes
// again as soon as its stream ends: a subscription taken between the end of
// the last one and the server's close would hold a connection open that
// the server's Close waits for, so none is taken once Close began.
func (a *Agent) Close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.Disconnect()
	a.srv.CloseClientConnections()
	a.srv.Close()
}

// Send streams an event on the current subscription; false if none.
func (a *Agent) Send(ev *executor.Event) bool {
	a.mu.Lock()
	s := a.stream
	a.mu.Unlock()
	if s == nil {
		return false
	}
	s <- ev
	return true
}

// Disconnect ends the current subscription, as an agent restart would.
func (a *Agent) Disconnect() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hangup != nil {
		close(a.hangup)
		a.hangup, a.stream = nil, nil
	}
}

func (a *Agent) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/executor" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Content-Type") == typeRecordIO {
		a.serveBatch(w, r)
		return
	}
	var call executor.Call
	body, _ := io.ReadAll(r.Body)
	ct := r.Header.Get("Content-Type")
	var err error
	switch ct {
	case typeJSON:
		err = json.Unmarshal(body, &call)
	case typeProtobuf:
		err = call.Unmarshal(body)
	default:
		err = fmt.Errorf("Content-Type %q", ct)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("bad call: %v", err), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.types = append(a.types, ct)
	a.mu.Unlock()
	if call.Type == executor.Call_SUBSCRIBE {
		a.subscribe(w, r, &call)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	a.apply(&call)
}

// apply takes an UPDATE or MESSAGE call.
func (a *Agent) apply(call *executor.Call) {
	a.Calls <- call
	if call.Type == executor.Call_UPDATE && a.autoAck {
		st := call.Update.Status
		a.Send(&executor.Event{Type: executor.Event_ACKNOWLEDGED, Acknowledged: &executor.Event_Acknowledged{TaskID: st.TaskID, UUID: st.UUID}})
	}
}

// serveBatch takes several UPDATE and MESSAGE calls in one request, as the
// embedded agent does: RecordIO records in protobuf; all or none.
func (a *Agent) serveBatch(w http.ResponseWriter, r *http.Request) {
	if mt := r.Header.Get("Message-Content-Type"); mt != typeProtobuf {
		http.Error(w, fmt.Sprintf("Message-Content-Type %q", mt), http.StatusUnsupportedMediaType)
		return
	}
	body, _ := io.ReadAll(r.Body)
	recs, err := mesosframe.Records(body, 1024)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var batch []*executor.Call
	for _, rec := range recs {
		call := new(executor.Call)
		if err := call.Unmarshal(rec); err != nil || (call.Type != executor.Call_UPDATE && call.Type != executor.Call_MESSAGE) {
			http.Error(w, fmt.Sprintf("bad call %v: %v", call.Type, err), http.StatusBadRequest)
			return
		}
		batch = append(batch, call)
	}
	a.mu.Lock()
	a.types = append(a.types, typeRecordIO+" ("+typeProtobuf+")")
	a.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	for _, call := range batch {
		a.apply(call)
	}
}

func (a *Agent) subscribe(w http.ResponseWriter, r *http.Request, call *executor.Call) {
	stream, hangup := make(chan *executor.Event, 64), make(chan struct{})
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		http.Error(w, "agent stopping", http.StatusServiceUnavailable)
		return
	}
	if a.hangup != nil {
		close(a.hangup)
	}
	a.stream, a.hangup = stream, hangup
	a.mu.Unlock()
	ct := r.Header.Get("Content-Type")
	w.Header().Set("Content-Type", ct) // as Mesos: the stream's type equals the request's
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	a.Calls <- call
	for {
		select {
		case ev := <-stream:
			marshal := func() ([]byte, error) { return json.Marshal(ev) }
			if ct == typeProtobuf {
				marshal = ev.Marshal
			}
			b, err := marshal()
			if err != nil {
				panic(err)
			}
			fmt.Fprintf(w, "%d\n%s", len(b), b)
			w.(http.Flusher).Flush()
		case <-hangup:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Subscribed is the SUBSCRIBED event a real agent sends first.
func Subscribed() *executor.Event {
	return &executor.Event{Type: executor.Event_SUBSCRIBED, Subscribed: &executor.Event_Subscribed{
		FrameworkInfo: mesos.FrameworkInfo{User: "root", Name: "elasticjob"},
		AgentInfo:     mesos.AgentInfo{Hostname: "localhost"},
	}}
}

// Launch is a LAUNCH event for a task carrying data.
func Launch(taskID string, data []byte) *executor.Event {
	return &executor.Event{Type: executor.Event_LAUNCH, Launch: &executor.Event_Launch{Task: mesos.TaskInfo{
		Name: taskID, TaskID: mesos.TaskID{Value: taskID}, AgentID: mesos.AgentID{Value: "agent-1"}, Data: data,
	}}}
}

// Kill is a KILL event; grace < 0 means no kill policy.
func Kill(taskID string, graceNanos int64) *executor.Event {
	ev := &executor.Event{Type: executor.Event_KILL, Kill: &executor.Event_Kill{TaskID: mesos.TaskID{Value: taskID}}}
	if graceNanos >= 0 {
		ev.Kill.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: graceNanos}}
	}
	return ev
}

// Ack acknowledges an update.
func Ack(u *executor.Call_Update) *executor.Event {
	return &executor.Event{Type: executor.Event_ACKNOWLEDGED, Acknowledged: &executor.Event_Acknowledged{TaskID: u.Status.TaskID, UUID: u.Status.UUID}}
}

// Shutdown is the SHUTDOWN event.
func Shutdown() *executor.Event { return &executor.Event{Type: executor.Event_SHUTDOWN} }

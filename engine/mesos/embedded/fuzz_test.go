package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
)

// Names the fuzz harness's cluster always has, so that seeds (and the
// fuzzer) can address them.
const (
	fuzzFramework = "fuzz-framework"
	fuzzExecutor  = "fuzz-executor"
	fuzzSecret    = "secret-outside-the-work-dir"
)

// The embedded master's endpoints a fuzz input is sent to.
var fuzzPaths = []string{"/api/v1/scheduler", "/api/v1/executor", "/api/v1", "/files/read"}

// fuzzCluster builds a cluster (not listening) with one subscribed,
// suppressed framework, so no offer exists and no call can launch a
// process, and one subscribed executor record (no process).
func fuzzCluster(t *testing.T, workDir string) (*Cluster, string) {
	c, err := New(Config{WorkDir: workDir, CPUs: 2, MemMB: 1024, DiskMB: 1024, Ports: "[31000-31001]", Hostname: "fuzz-host",
		HeartbeatInterval: time.Hour, UpdateRetryInterval: time.Hour, ExecutorShutdownGrace: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	info := mesos.FrameworkInfo{User: "u", Name: "fuzz", ID: &mesos.FrameworkID{Value: fuzzFramework}}
	_, stream, herr := c.subscribe(info, streamFormat{contentType: typeJSON, codec: codec{}}, true)
	if herr != nil {
		t.Fatal(herr)
	}
	c.mu.Lock()
	fw := c.frameworks[fuzzFramework]
	e := &executor{fw: fw, agent: c.agents[0], id: fuzzExecutor, state: execRunning, tasks: map[string]*task{},
		info: mesos.ExecutorInfo{ExecutorID: mesos.ExecutorID{Value: fuzzExecutor}, FrameworkID: &mesos.FrameworkID{Value: fuzzFramework}}}
	fw.executors[keyOf(e)] = e
	c.mu.Unlock()
	return c, stream.id
}

// closeFuzzCluster tears every framework down (stopping update retries and
// filters) and closes the cluster.
func closeFuzzCluster(c *Cluster) {
	c.mu.Lock()
	for _, fw := range c.sortedFrameworks() {
		c.teardown(fw)
	}
	c.mu.Unlock()
	_ = c.Close()
}

func masterSeeds(f *testing.F) {
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	fwID := &mesos.FrameworkID{Value: fuzzFramework}
	uuid := []byte("0123456789abcdef")
	refuse := 1e300
	calls := []*scheduler.Call{
		{Type: scheduler.Call_SUBSCRIBE, FrameworkID: fwID, Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: "u", Name: "n", ID: fwID}}},
		{Type: scheduler.Call_SUBSCRIBE, Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: "u", Name: "new"}, SuppressedRoles: []string{"*"}}},
		{Type: scheduler.Call_REVIVE, FrameworkID: fwID}, {Type: scheduler.Call_SUPPRESS, FrameworkID: fwID}, {Type: scheduler.Call_TEARDOWN, FrameworkID: fwID},
		{Type: scheduler.Call_DECLINE, FrameworkID: fwID, Decline: &scheduler.Call_Decline{OfferIDs: []mesos.OfferID{{Value: "o1"}}, Filters: &mesos.Filters{RefuseSeconds: &refuse}}},
		{Type: scheduler.Call_ACCEPT, FrameworkID: fwID, Accept: &scheduler.Call_Accept{OfferIDs: []mesos.OfferID{{Value: "o1"}}, Operations: []mesos.Offer_Operation{
			{Type: mesos.Offer_Operation_LAUNCH, Launch: &mesos.Offer_Operation_Launch{TaskInfos: []mesos.TaskInfo{{Name: "t", TaskID: mesos.TaskID{Value: "t1"}, AgentID: mesos.AgentID{Value: "a"}}}}}}}},
		{Type: scheduler.Call_KILL, FrameworkID: fwID, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}},
		{Type: scheduler.Call_ACKNOWLEDGE, FrameworkID: fwID, Acknowledge: &scheduler.Call_Acknowledge{TaskID: mesos.TaskID{Value: "t1"}, AgentID: mesos.AgentID{Value: "a"}, UUID: uuid}},
		{Type: scheduler.Call_RECONCILE, FrameworkID: fwID, Reconcile: &scheduler.Call_Reconcile{Tasks: []scheduler.Call_Reconcile_Task{{TaskID: mesos.TaskID{Value: "t1"}}}}},
		{Type: scheduler.Call_MESSAGE, FrameworkID: fwID, Message: &scheduler.Call_Message{ExecutorID: mesos.ExecutorID{Value: fuzzExecutor}, Data: []byte("hi")}},
		{Type: scheduler.Call_SHUTDOWN, FrameworkID: fwID, Shutdown: &scheduler.Call_Shutdown{ExecutorID: mesos.ExecutorID{Value: fuzzExecutor}}},
		{Type: scheduler.Call_KILL, FrameworkID: fwID}, {Type: scheduler.Call_ACKNOWLEDGE, FrameworkID: fwID}, {Type: scheduler.Call_ACCEPT, FrameworkID: fwID},
	}
	for _, call := range calls {
		f.Add(js(call), "application/json", "", uint8(0), true)
		if pb, err := call.Marshal(); err == nil {
			f.Add(pb, "application/x-protobuf", "application/recordio", uint8(0), true)
		}
	}
	fin := mesos.TASK_FINISHED
	src := mesos.SOURCE_EXECUTOR
	execCalls := []*execpb.Call{
		{Type: execpb.Call_SUBSCRIBE, FrameworkID: *fwID, ExecutorID: mesos.ExecutorID{Value: fuzzExecutor}, Subscribe: &execpb.Call_Subscribe{
			UnacknowledgedUpdates: []execpb.Call_Update{{Status: mesos.TaskStatus{TaskID: mesos.TaskID{Value: "t1"}, State: &fin, UUID: uuid, Source: &src}}}}},
		{Type: execpb.Call_UPDATE, FrameworkID: *fwID, ExecutorID: mesos.ExecutorID{Value: fuzzExecutor}, Update: &execpb.Call_Update{
			Status: mesos.TaskStatus{TaskID: mesos.TaskID{Value: "t1"}, State: &fin, UUID: uuid, Source: &src}}},
		{Type: execpb.Call_MESSAGE, FrameworkID: *fwID, ExecutorID: mesos.ExecutorID{Value: fuzzExecutor}, Message: &execpb.Call_Message{Data: []byte("x")}},
		{Type: execpb.Call_UPDATE, FrameworkID: *fwID, ExecutorID: mesos.ExecutorID{Value: fuzzExecutor}},
	}
	for _, call := range execCalls {
		f.Add(js(call), "application/json", "application/recordio", uint8(1), true)
		if pb, err := call.Marshal(); err == nil {
			f.Add(pb, "application/x-protobuf", "", uint8(1), true)
		}
	}
	f.Add([]byte(`{"type":"GET_EXECUTORS"}`), "application/json", "", uint8(2), false)
	f.Add([]byte(`{"type":"GET_STATE"}`), "application/json", "", uint8(2), false)
	f.Add([]byte("path=WORKDIR/slaves/stdout&offset=0"), "", "", uint8(3), false)
	f.Add([]byte("path=WORKDIR/../secret&offset=0&length=-1"), "", "", uint8(3), false)
	f.Add([]byte("path=WORKDIR/link&offset=-1"), "", "", uint8(3), false)
	f.Add([]byte("path=WORKDIR/slaves/stdout&offset=9223372036854775807&length=9223372036854775807"), "", "", uint8(3), false)
	f.Add([]byte(`{"type":"SUBSCRIBE"`), "application/json; charset=utf-8", "*/*", uint8(0), false)
	f.Add([]byte(`{}`), "text/plain", "application/x-protobuf", uint8(1), false)
	f.Add([]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0x0f}, "application/x-protobuf", "application/recordio", uint8(0), true)
}

// FuzzMasterCalls sends any body (JSON or protobuf, by the fuzzed
// Content-Type; Accept fuzzed too) to the embedded master's scheduler,
// executor and operator APIs, and any query to /files/read, with the
// framework's real stream id or none. Properties: no panic and bounded
// time; only Mesos's answers (2xx, 4xx, or 501 for a call type it does not
// implement), every error with a text body; /files/read never returns data
// from outside the work directory; the agent's free resources never go
// negative.
func FuzzMasterCalls(f *testing.F) {
	masterSeeds(f)
	workDir := f.TempDir()
	if err := os.MkdirAll(filepath.Join(workDir, "slaves"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workDir, "slaves", "stdout"), []byte("task output\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	secret := filepath.Join(filepath.Dir(workDir), filepath.Base(workDir)+"-secret")
	if err := os.WriteFile(secret, []byte(fuzzSecret), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.Remove(secret) })
	if err := os.Symlink(secret, filepath.Join(workDir, "link")); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType, accept string, target uint8, withStream bool) {
		c, streamID := fuzzCluster(t, workDir)
		defer closeFuzzCluster(c)
		path := fuzzPaths[int(target)%len(fuzzPaths)]
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		if path == "/files/read" {
			req = httptest.NewRequest(http.MethodGet, path, nil)
			req.URL.RawQuery = strings.ReplaceAll(string(body), "WORKDIR", workDir)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", accept)
		if withStream {
			req.Header.Set("Mesos-Stream-Id", streamID)
		}
		ctx, cancel := context.WithCancel(req.Context())
		cancel() // a subscription answers its headers and ends at once
		req = req.WithContext(ctx)
		w := httptest.NewRecorder()
		fuzzing.Bounded(t, "POST "+path, func() {
			switch path {
			case "/api/v1/scheduler":
				c.handleScheduler(w, req)
			case "/api/v1/executor":
				c.handleExecutor(w, req)
			case "/api/v1":
				c.handleOperator(w, req)
			default:
				c.handleFilesRead(w, req)
			}
		})
		checkMasterReply(t, path, body, w)
		c.mu.Lock()
		free := c.available(c.agents[0])
		c.mu.Unlock()
		for _, r := range free {
			if s := r.GetScalar(); s != nil && !(s.Value >= 0) {
				t.Fatalf("%s %q: free %s is %v", path, body, r.Name, s.Value)
			}
		}
	})
}

func checkMasterReply(t *testing.T, path string, body []byte, w *httptest.ResponseRecorder) {
	t.Helper()
	code := w.Code
	switch {
	case code >= 200 && code < 300:
		if strings.Contains(w.Body.String(), fuzzSecret) {
			t.Fatalf("%s %q read a file outside the work directory", path, body)
		}
		if w.Header().Get("Mesos-Stream-Id") != "" || path == "/api/v1/executor" && code == http.StatusOK {
			checkStream(t, path, body, w)
		}
	case code >= 400 && code < 500, code == http.StatusNotImplemented && strings.Contains(w.Body.String(), "is not supported"):
		if w.Body.Len() == 0 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
			t.Fatalf("%s %q: %d with body %q (%s)", path, body, code, w.Body.String(), w.Header().Get("Content-Type"))
		}
	default:
		t.Fatalf("%s %q: status %d: %s", path, body, code, w.Body.String())
	}
}

// TestRefuseSecondsBounds: a decline's refuse_seconds, whatever its value,
// gives a filter between none and a year. 1e300 seconds used to overflow
// the Duration to a negative one, so the offer came straight back.
func TestRefuseSecondsBounds(t *testing.T) {
	c, _ := fuzzCluster(t, t.TempDir())
	defer closeFuzzCluster(c)
	c.mu.Lock()
	defer c.mu.Unlock()
	fw := c.frameworks[fuzzFramework]
	for _, secs := range []float64{1e300, 1e10, 3600, -1, math.NaN(), math.Inf(1)} {
		a := c.agents[0]
		c.clearFilters(fw)
		c.addFilter(fw, a, a.total.Clone(), &mesos.Filters{RefuseSeconds: &secs})
		if n := len(fw.filters[a.id]); n != 1 {
			t.Errorf("refuse_seconds %v: %d filters, want 1", secs, n)
		}
		c.clearFilters(fw)
	}
}

// checkStream: what a subscription wrote is RecordIO frames, each an event
// in the negotiated codec (Message-Content-Type under application/recordio).
func checkStream(t *testing.T, path string, body []byte, w *httptest.ResponseRecorder) {
	t.Helper()
	ct := w.Header().Get("Content-Type")
	if ct == typeRecordIO {
		ct = w.Header().Get("Message-Content-Type")
	}
	c, ok := codecFor(ct)
	if !ok {
		t.Fatalf("%s %q: stream of type %q", path, body, ct)
	}
	frames := recordio.NewReader(bytes.NewReader(w.Body.Bytes()))
	for n := 0; ; n++ {
		frame, err := frames.ReadFrame()
		if errors.Is(err, io.EOF) {
			return // (the request's context is cancelled: the stream may end before any event)
		}
		if err != nil {
			t.Fatalf("%s %q: frame %d: %v in %q", path, body, n, err, w.Body.Bytes())
		}
		var m message = &scheduler.Event{}
		if path == "/api/v1/executor" {
			m = &execpb.Event{}
		}
		if err := c.decode(frame, m); err != nil {
			t.Fatalf("%s %q: frame %d %q does not decode: %v", path, body, n, frame, err)
		}
	}
}

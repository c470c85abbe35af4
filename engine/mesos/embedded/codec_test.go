package embedded

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execapi "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// TestDecodeChecksCallsFirst: a JSON call is decoded as encoding/json
// would (the generated decoder is handed only a valid body, trailing bytes
// after the value included), and an invalid body gets encoding/json's
// syntax error, which says where.
func TestDecodeChecksCallsFirst(t *testing.T) {
	var c codec
	var call scheduler.Call
	body := []byte(`{"type":"ACKNOWLEDGE","framework_id":{"value":"fw"},"acknowledge":{"agent_id":{"value":"a"},"task_id":{"value":"t"},"uuid":"AAEC"}}`)
	if err := c.decode(body, &call); err != nil || call.Type != scheduler.Call_ACKNOWLEDGE || call.Acknowledge.TaskID.Value != "t" || len(call.Acknowledge.UUID) != 3 {
		t.Fatalf("call %+v, %v", call, err)
	}
	for _, bad := range []string{`{"type":"DECLINE"}}`, `{"type":`, `{"type":"DECLINE"} x`, ``} {
		call = scheduler.Call{}
		err := c.decode([]byte(bad), &call)
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: err = %v, want encoding/json's syntax error", bad, err)
		}
		if call.Type != scheduler.Call_UNKNOWN {
			t.Errorf("%q: decoded %v from an invalid body", bad, call.Type)
		}
	}
}

// BenchmarkDecodeExecutorUpdate: the body of an executor's UPDATE call,
// as the agent decodes it for every status update of every task.
func BenchmarkDecodeExecutorUpdate(b *testing.B) {
	data := []byte(`{"launchTime":"2026-11-25T00:57:35.115848Z","forkTime":"2026-11-25T00:57:35.119339Z","startTime":"2026-11-25T00:57:35.121525Z","hostname":"vm","ip":"127.0.0.1"}`)
	state := mesos.TASK_RUNNING
	src := execapi.Call{Type: execapi.Call_UPDATE,
		FrameworkID: mesos.FrameworkID{Value: "f43e245b-3940-4d63-8487-78ae5e627985-0001"},
		ExecutorID:  mesos.ExecutorID{Value: "lat_app@-@f43e245b-3940-4d63-8487-78ae5e627985-S0"},
		Update: &execapi.Call_Update{Status: mesos.TaskStatus{
			TaskID: mesos.TaskID{Value: "lat_job@-@0@-@READY@-@f43e245b-3940-4d63-8487-78ae5e627985-S0@-@01a21035-4087-73d9-b3a4-e173a49db101"},
			State:  &state, Data: data, UUID: []byte("0123456789abcdef"),
			Source: mesos.SOURCE_EXECUTOR.Enum(), Timestamp: new(float64),
			ExecutorID: &mesos.ExecutorID{Value: "lat_app@-@f43e245b-3940-4d63-8487-78ae5e627985-S0"}}}}
	body, err := codec{}.encode(&src)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var c execapi.Call
		if err := (codec{}).decode(body, &c); err != nil {
			b.Fatal(err)
		}
	}
}

// A body is read whole whatever its declared length: exact, missing,
// shorter or longer than what comes, and a body over the limit fails.
func TestReadBodyWhateverLength(t *testing.T) {
	body := strings.Repeat("x", 3000)
	for _, n := range []int64{3000, 0, -1, 10, 2999, 3001, 1 << 40} {
		got, err := readBody(strings.NewReader(body), n)
		if err != nil || string(got) != body {
			t.Errorf("length %d: %d bytes, %v", n, len(got), err)
		}
	}
	rec := httptest.NewRecorder()
	_, err := readBody(http.MaxBytesReader(rec, io.NopCloser(strings.NewReader(body)), 100), 3000)
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		t.Errorf("over the limit: %v", err)
	}
}

// encodeFrame writes what frame(encode(m)) writes, in both media types.
func TestEncodeFrameIsFramedEncode(t *testing.T) {
	state := mesos.TASK_RUNNING
	msgs := []message{
		&scheduler.Event{Type: scheduler.Event_HEARTBEAT},
		&scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: mesos.TaskStatus{
			TaskID: mesos.TaskID{Value: "job@-@0@-@READY@-@agent \"x\"@-@1"}, State: &state, Data: []byte("{\"a\":1}"), UUID: []byte{0, 1, 2, 255}}}},
		&execapi.Event{Type: execapi.Event_ACKNOWLEDGED, Acknowledged: &execapi.Event_Acknowledged{TaskID: mesos.TaskID{Value: "t"}, UUID: []byte("0123456789abcdef")}},
	}
	for _, c := range []codec{{}, {proto: true}} {
		var got, want [][]byte
		for range 3 { // a frame keeps its bytes while later ones are encoded
			for _, m := range msgs {
				w, err := c.encode(m)
				if err != nil {
					t.Fatal(err)
				}
				g, err := c.encodeFrame(m)
				if err != nil {
					t.Fatal(err)
				}
				got, want = append(got, g), append(want, frame(w))
			}
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("proto %v, frame %d: %q\nwant %q", c.proto, i, got[i], want[i])
			}
		}
	}
}

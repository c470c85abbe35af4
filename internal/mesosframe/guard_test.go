package mesosframe

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/encoding"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/framing"
	mjson "github.com/mesos/mesos-go/api/v1/lib/encoding/json"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	fflib "github.com/pquerna/ffjson/fflib/v1"
)

func frames(stream string) framing.Reader { return recordio.NewReader(bytes.NewReader([]byte(stream))) }

func TestGuardTurnsThePanicIntoAnError(t *testing.T) {
	g := Guard(frames("2\n{}9227000000000000000\n"))
	if b, err := g.ReadFrame(); err != nil || string(b) != "{}" {
		t.Fatalf("first frame %q, %v", b, err)
	}
	for range 2 { // and stays broken
		if _, err := g.ReadFrame(); !errors.Is(err, framing.ErrorBadSize) {
			t.Fatalf("err = %v, want a bad frame size", err)
		}
	}
}

func TestGuardPassesFramesAndEOF(t *testing.T) {
	g := Guard(frames("2\n{}0\n3\n[1]"))
	for _, want := range []string{"{}", "[1]"} {
		if b, err := g.ReadFrame(); err != nil || string(b) != want {
			t.Fatalf("frame %q, %v; want %q", b, err, want)
		}
	}
	if _, err := g.ReadFrame(); !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v, want EOF", err)
	}
}

func TestJSONCodecDecodesThroughTheGuard(t *testing.T) {
	dec := JSONCodec.NewDecoder(func() framing.Reader { return frames("17\n{\"type\":\"OFFERS\"}9227000000000000000\n{}") })
	var ev scheduler.Event
	if err := dec.Decode(&ev); err != nil || ev.Type != scheduler.Event_OFFERS {
		t.Fatalf("event %v, %v", ev.Type, err)
	}
	if err := dec.Decode(&ev); !errors.Is(err, framing.ErrorBadSize) {
		t.Fatalf("err = %v", err)
	}
}

// TestJSONCodecEncodesAsMesosGoDoes: NewEncoder writes what mesos-go's own
// JSON encoder writes (json.Marshal of the call), for a call with nested
// messages, repeated fields, bytes and text that encoding/json would escape.
func TestJSONCodecEncodesAsMesosGoDoes(t *testing.T) {
	data := []byte("task <data> & more")
	call := &scheduler.Call{
		Type:        scheduler.Call_ACCEPT,
		FrameworkID: &mesos.FrameworkID{Value: "fw-1"},
		Accept: &scheduler.Call_Accept{
			OfferIDs: []mesos.OfferID{{Value: "o-1"}, {Value: "o-2"}},
			Operations: []mesos.Offer_Operation{{
				Type: mesos.Offer_Operation_LAUNCH,
				Launch: &mesos.Offer_Operation_Launch{TaskInfos: []mesos.TaskInfo{{
					Name:    "job <a> & \"b\"",
					TaskID:  mesos.TaskID{Value: "job@-@0@-@READY@-@x"},
					AgentID: mesos.AgentID{Value: "agent-1"},
					Data:    data,
					Resources: []mesos.Resource{{
						Name:   "cpus",
						Type:   mesos.SCALAR.Enum(),
						Scalar: &mesos.Value_Scalar{Value: 0.25},
					}},
				}}},
			}},
		},
	}
	var got bytes.Buffer
	if err := JSONCodec.NewEncoder(encoding.SinkWriter(&got)).Encode(call); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := mjson.NewEncoder(encoding.SinkWriter(&want)).Encode(call); err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got.Bytes(), &g); err != nil {
		t.Fatalf("not JSON: %v: %s", err, got.Bytes())
	}
	if err := json.Unmarshal(want.Bytes(), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("encoded\n%s\nmesos-go encodes\n%s", got.Bytes(), want.Bytes())
	}
	var back scheduler.Call
	if err := json.Unmarshal(got.Bytes(), &back); err != nil || !bytes.Equal(back.Accept.Operations[0].Launch.TaskInfos[0].Data, data) {
		t.Fatalf("decoded back: %v, %q", err, back.Accept.Operations[0].Launch.TaskInfos[0].Data)
	}
}

// TestEncoderReusesBuffersSafely: calls of growing and shrinking sizes
// encoded one after another, through a plain writer and a RecordIO one,
// each come out as MarshalJSON writes them, though their buffers go back
// to ffjson's pool after each frame and are reused by the next.
func TestEncoderReusesBuffersSafely(t *testing.T) {
	call := func(n int) *scheduler.Call {
		c := &scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, FrameworkID: &mesos.FrameworkID{Value: "fw"},
			Acknowledge: &scheduler.Call_Acknowledge{AgentID: mesos.AgentID{Value: "agent"},
				TaskID: mesos.TaskID{Value: strings.Repeat("t", n)}, UUID: bytes.Repeat([]byte{byte(n)}, 16)}}
		return c
	}
	sizes := []int{10, 5000, 3, 70000, 64, 1 << 10, 0, 300000, 17}
	var plain, framed bytes.Buffer
	var frames [][]byte
	encPlain := JSONCodec.NewEncoder(encoding.SinkWriter(&plain))
	encFramed := JSONCodec.NewEncoder(func() framing.Writer { return recordio.NewWriter(&framed) })
	for _, n := range sizes {
		plain.Reset()
		if err := encPlain.Encode(call(n)); err != nil {
			t.Fatal(err)
		}
		if err := encFramed.Encode(call(n)); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, bytes.Clone(plain.Bytes()))
	}
	r := recordio.NewReader(&framed)
	for i, n := range sizes {
		want, err := call(n).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(frames[i], want) {
			t.Fatalf("call %d (%d bytes of task id): wrote %.80s…, want %.80s…", i, n, frames[i], want)
		}
		got, err := r.ReadFrame()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("RecordIO frame %d: %v, %.80s…, want %.80s…", i, err, got, want)
		}
	}
}

// TestUnmarshalChecksFramesFirst: a self-decoding value is handed only
// valid frames (trailing bytes after the value included, which a generated
// decoder would ignore), the error being encoding/json's; other values go
// through encoding/json.
func TestUnmarshalChecksFramesFirst(t *testing.T) {
	var ev scheduler.Event
	if err := Unmarshal([]byte(`{"type":"HEARTBEAT"}`), &ev); err != nil || ev.Type != scheduler.Event_HEARTBEAT {
		t.Fatalf("event %v, %v", ev.Type, err)
	}
	for _, bad := range []string{`{"type":"OFFERS"}}`, `{"type":`, `{"type":"OFFERS"} x`, ``} {
		ev = scheduler.Event{}
		err := Unmarshal([]byte(bad), &ev)
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: err = %v, want encoding/json's syntax error", bad, err)
		}
		if ev.Type != scheduler.Event_UNKNOWN {
			t.Errorf("%q: decoded %v from an invalid frame", bad, ev.Type)
		}
	}
	var m map[string]int
	if err := Unmarshal([]byte(`{"a":1}`), &m); err != nil || m["a"] != 1 {
		t.Fatalf("map %v, %v", m, err)
	}
}

// TestAcknowledgeWrittenAsGenerated: an ACKNOWLEDGE call comes out byte
// for byte as its generated MarshalJSONBuf writes it, with and without a
// framework id and a uuid, for ids that need escaping; any other call, or
// an acknowledgement with another field set, is left to MarshalJSONBuf.
func TestAcknowledgeWrittenAsGenerated(t *testing.T) {
	ids := []string{"", "t", "job@-@0@-@READY@-@agent@-@0190c3a2", "quote \" back \\ <tag> & \u2028", "ctl \x00\x1f\t\n", "bad utf8 \xff\xfe", "日本語"}
	uuids := [][]byte{nil, {}, {0}, bytes.Repeat([]byte{0xff}, 16), []byte("0123456789abcdefXYZ")}
	fws := []*mesos.FrameworkID{nil, {Value: "fw-1"}, {Value: "fw \"x\""}}
	n := 0
	for _, fw := range fws {
		for i, id := range ids {
			for _, u := range uuids {
				c := &scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, FrameworkID: fw,
					Acknowledge: &scheduler.Call_Acknowledge{AgentID: mesos.AgentID{Value: ids[len(ids)-1-i]}, TaskID: mesos.TaskID{Value: id}, UUID: u}}
				var got, want fflib.Buffer
				if !writeAcknowledge(&got, c) {
					t.Fatalf("%v not written", c)
				}
				if err := c.MarshalJSONBuf(&want); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("wrote\n%s\nwant\n%s", got.Bytes(), want.Bytes())
				}
				n++
			}
		}
	}
	ack := &scheduler.Call_Acknowledge{TaskID: mesos.TaskID{Value: "t"}}
	for _, c := range []*scheduler.Call{
		{Type: scheduler.Call_ACKNOWLEDGE},
		{Type: scheduler.Call_DECLINE, Acknowledge: ack},
		{Type: scheduler.Call_ACKNOWLEDGE, Acknowledge: ack, Kill: &scheduler.Call_Kill{}},
		{Type: scheduler.Call_ACKNOWLEDGE, Acknowledge: ack, Reconcile: &scheduler.Call_Reconcile{}},
	} {
		var b fflib.Buffer
		if writeAcknowledge(&b, c) || b.Len() != 0 {
			t.Fatalf("%v: written (%q), want it left to MarshalJSONBuf", c, b.Bytes())
		}
	}
	t.Logf("%d acknowledgements compared", n)
}

// BenchmarkEncodeAcknowledge: what sending one acknowledgement costs the
// encoder (the scheduler sends one per status update).
func BenchmarkEncodeAcknowledge(b *testing.B) {
	c := &scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, FrameworkID: &mesos.FrameworkID{Value: "0190c3a2-fw"},
		Acknowledge: &scheduler.Call_Acknowledge{AgentID: mesos.AgentID{Value: "0190c3a2-agent-S12"},
			TaskID: mesos.TaskID{Value: "job-00042@-@3@-@READY@-@0190c3a2-agent-S12@-@0190c3a2-7b1e-7c4d-9a11-5f3e2d1c0b9a"},
			UUID:   bytes.Repeat([]byte{7}, 16)}}
	enc := JSONCodec.NewEncoder(encoding.SinkWriter(io.Discard))
	b.ReportAllocs()
	for b.Loop() {
		if err := enc.Encode(c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProtobufCodecRoundTrips: a call encoded by ProtobufCodec is the
// generated Marshal's bytes, one RecordIO frame; frames decode through the
// guard, into a type that embeds a generated one as well, and a value
// decoded into is reset first (generated code merges).
func TestProtobufCodecRoundTrips(t *testing.T) {
	call := &scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, FrameworkID: &mesos.FrameworkID{Value: "fw"},
		Acknowledge: &scheduler.Call_Acknowledge{AgentID: mesos.AgentID{Value: "a1"}, TaskID: mesos.TaskID{Value: "t1"}, UUID: []byte{1, 2, 3}}}
	var buf bytes.Buffer
	if err := ProtobufCodec.NewEncoder(func() framing.Writer { return recordio.NewWriter(&buf) }).Encode(call); err != nil {
		t.Fatal(err)
	}
	want, _ := call.Marshal()
	if got := buf.String(); got != strconv.Itoa(len(want))+"\n"+string(want) {
		t.Fatalf("frame %q, want %q", got, want)
	}

	status := mesos.TaskStatus{TaskID: mesos.TaskID{Value: "t1"}, State: mesos.TASK_RUNNING.Enum(), Data: []byte(`{"x":1}`)}
	b1, _ := (&scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: status}}).Marshal()
	b2, _ := (&scheduler.Event{Type: scheduler.Event_HEARTBEAT}).Marshal()
	stream := strconv.Itoa(len(b1)) + "\n" + string(b1) + strconv.Itoa(len(b2)) + "\n" + string(b2) + "9227000000000000000\n"
	dec := ProtobufCodec.NewDecoder(func() framing.Reader { return frames(stream) })
	var ev struct{ scheduler.Event }
	if err := dec.Decode(&ev); err != nil || ev.Type != scheduler.Event_UPDATE || !reflect.DeepEqual(ev.Update.Status, status) {
		t.Fatalf("event %v, %v", ev.Event, err)
	}
	if err := dec.Decode(&ev); err != nil || ev.Type != scheduler.Event_HEARTBEAT || ev.Update != nil {
		t.Fatalf("second event %v, %v: not reset before decoding", ev.Event, err)
	}
	if err := dec.Decode(&ev); !errors.Is(err, framing.ErrorBadSize) {
		t.Fatalf("err = %v", err)
	}
}

package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mesos/mesos-go/api/v1/lib/encoding/framing"
	"github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
	"github.com/ejcloud/elasticjob/jobs"
)

// recordIO frames JSON documents as the agent's SUBSCRIBE stream does.
func recordIO(docs ...string) []byte {
	var b []byte
	for _, d := range docs {
		b = append(strconv.AppendInt(b, int64(len(d)), 10), '\n')
		b = append(b, d...)
	}
	return b
}

// streamDecoder is exactly how httpcli decodes a streaming response with
// the executor's codec: RecordIO frames, each through unmarshalTolerant.
func streamDecoder(b []byte) func(*executor.Event) error {
	dec := jsonCodec.NewDecoder(func() framing.Reader { return recordio.NewReader(bytes.NewReader(b)) })
	return func(ev *executor.Event) error { return dec.Decode(ev) }
}

func eventSeeds(f *testing.F) {
	launch := func(id string, data []byte) string {
		b, _ := json.Marshal(data)
		return `{"type":"LAUNCH","launch":{"task":{"name":"t","task_id":{"value":"` + id + `"},"agent_id":{"value":"a"},"data":` + string(b) + `}}}`
	}
	valid := taskData("file:///nonexistent/app.sh", "app.sh", 0, nil)
	for _, docs := range [][]string{
		{`{"type":"SUBSCRIBED","subscribed":{"executor_info":{"executor_id":{"value":"e"}},"framework_info":{"user":"u","name":"f"},"agent_info":{"hostname":"h"}}}`,
			launch("job@-@0@-@READY@-@a@-@u", valid), `{"type":"ACKNOWLEDGED","acknowledged":{"task_id":{"value":"job@-@0@-@READY@-@a@-@u"},"uuid":"AAAAAAAAAAAAAAAAAAAAAA=="}}`,
			`{"type":"KILL","kill":{"task_id":{"value":"job@-@0@-@READY@-@a@-@u"},"kill_policy":{"grace_period":{"nanoseconds":1}}}}`, `{"type":"SHUTDOWN"}`},
		{`{"type":"HEARTBEAT"}`, `{"type":"MESSAGE","message":{"data":"aGk="}}`, `{"type":"ERROR","error":{"message":"bad"}}`},
		{`{"type":"LAUNCH"}`, `{"type":"KILL"}`, `{"type":"ACKNOWLEDGED"}`, `{"type":"MESSAGE"}`, `{"type":"ERROR"}`, `{"type":"LAUNCH_GROUP"}`, `{"type":"SUBSCRIBED"}`},
		{`{"type":"LAUNCH_GROUP","launch_group":{"task_group":{"tasks":[{"name":"x","task_id":{"value":"g"},"agent_id":{"value":"a"}}]}}}`},
		{`{"type":"SUBSCRIBED","subscribed":{"agent_info":{"hostname":"h","resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"provider_id":{"value":"p"},"new_field":1}]}}}`},
		{`{"type":"FUTURE_EVENT","future":{}}`, launch("t1", []byte("not json")), launch("t1", valid), `{"type":7}`, `null`, `[]`, `{"type":"LAUNCH","launch":null}`},
	} {
		f.Add(recordIO(docs...))
	}
	f.Add([]byte("5\n{}"))                         // truncated frame
	f.Add([]byte("99999999999999999999\n{}"))      // size field too long
	f.Add([]byte("4194305\n" + "{}"))              // declares more than the 4 MiB limit
	f.Add([]byte("0\n0\n2\n{}"))                   // empty frames
	f.Add([]byte(" 2 \n{}x\n"))                    // spaces around the size, a bad size after
	f.Add([]byte("-1\n{}"))                        // negative size
	f.Add([]byte("0x2\n{}"))                       // hex size
	f.Add([]byte("2\n{}2\n{\"type\":\"LAUNCH\"}")) // the last frame is cut short
}

// FuzzEventDecode decodes any bytes as the agent's event stream. Properties:
// no panic; bounded time; at most one event per frame; every event decoded
// from valid UTF-8 (strictly, or loosely for fields newer than the protos)
// encodes to JSON that decodes back to the same event.
func FuzzEventDecode(f *testing.F) {
	eventSeeds(f)
	f.Fuzz(func(t *testing.T, stream []byte) {
		var events []executor.Event
		fuzzing.Bounded(t, "decode", func() {
			decode := streamDecoder(stream)
			for range len(stream) + 1 { // a frame takes at least 2 bytes
				var ev executor.Event
				if decode(&ev) != nil {
					return
				}
				events = append(events, ev)
			}
			events = nil // more events than frames can hold
		})
		if events == nil && len(stream) > 0 && decodesAll(stream) {
			t.Fatalf("%q decoded to more events than it has frames", stream)
		}
		if !utf8.Valid(stream) {
			return // mesos-go's decoders keep invalid UTF-8 that encoding/json replaces: no round trip
		}
		for _, ev := range events {
			b, err := json.Marshal(&ev)
			if err != nil {
				t.Fatalf("event %+v decoded from %q does not encode: %v", ev, stream, err)
			}
			var back executor.Event
			if err := unmarshalTolerant(b, &back); err != nil || !reflect.DeepEqual(back, ev) {
				t.Fatalf("event %s decoded from %q does not decode back the same (%v):\n%+v", b, stream, err, back)
			}
		}
	})
}

// decodesAll reports whether the first decode of stream succeeds, used to
// tell "no events" from "too many".
func decodesAll(stream []byte) bool {
	var ev executor.Event
	return streamDecoder(stream)(&ev) == nil
}

// streamAgent serves one subscription whose events are decoded from fixed
// bytes, accepts every call, and is gone after that subscription.
type streamAgent struct {
	stream []byte
	mu     sync.Mutex
	subs   int
}

func (a *streamAgent) Subscribe(_ context.Context, call *executor.Call) (Events, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.subs++; a.subs > 1 {
		return nil, errors.New("agent gone")
	}
	return decodedEvents(streamDecoder(a.stream)), nil
}

func (a *streamAgent) Send(context.Context, *executor.Call) error { return nil }

type decodedEvents func(*executor.Event) error

func (d decodedEvents) Decode(ev *executor.Event) error { return d(ev) }
func (d decodedEvents) Close() error                    { return nil }

// taskDataRunner does what the pipeline does first with a task (decode its
// payload) and ends the task at once, running nothing.
type taskDataRunner struct{}

func (taskDataRunner) Run(ctx context.Context, _ string, data []byte, h Hooks) Outcome {
	if _, err := jobs.UnmarshalTaskData(data); err != nil {
		return Outcome{State: Failed, Message: err.Error()}
	}
	h.Running()
	if ctx.Err() != nil {
		return Outcome{State: Killed, Message: "killed"}
	}
	return Outcome{State: Finished}
}

// FuzzExecutorEvents runs the executor against an agent whose event stream
// is any bytes, decoded by the executor's own codec. Properties: no panic
// (an event without its body, such as {"type":"LAUNCH"}, must not crash the
// executor) and the executor exits once the agent is gone.
func FuzzExecutorEvents(f *testing.F) {
	eventSeeds(f)
	f.Fuzz(func(t *testing.T, stream []byte) {
		agent := &streamAgent{stream: stream}
		e := New(agent, taskDataRunner{}, Options{FrameworkID: "fw", ExecutorID: "ex",
			RecoveryTimeout: time.Nanosecond, AckTimeout: time.Nanosecond, KillGrace: time.Nanosecond, ShutdownGrace: time.Nanosecond})
		fuzzing.Bounded(t, "Executor.Run", func() { _ = e.Run(context.Background()) })
	})
}

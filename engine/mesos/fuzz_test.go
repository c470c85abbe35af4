package mesos

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/mesos/mesos-go/api/v1/lib/encoding/framing"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
	"github.com/ejcloud/elasticjob/internal/mesosframe"
)

func frameAll(docs ...string) []byte {
	var b []byte
	for _, d := range docs {
		b = append(strconv.AppendInt(b, int64(len(d)), 10), '\n')
		b = append(b, d...)
	}
	return b
}

// FuzzSchedulerEvents decodes any bytes as the master's event stream, the
// way the client does (httpcli's RecordIO reader behind mesosframe's guard,
// each frame through the tolerant event decoder). Properties: no panic and
// bounded time (the enum repair loop included); every event decoded from
// valid UTF-8 encodes to JSON that decodes to the same event.
func FuzzSchedulerEvents(f *testing.F) {
	for _, docs := range [][]string{
		{realSubscribed, `{"type":"EVENT_FROM_THE_FUTURE"}`, `{"type":"HEARTBEAT"}`},
		{`{"type":"UPDATE","update":{"status":{"task_id":{"value":"t"},"state":"TASK_NEWER_STATE","reason":"REASON_NEW","source":"SOURCE_NEW","uuid":"AAAA"}}}`},
		{`{"type":"OFFERS","offers":{"offers":[{"id":{"value":"o"},"framework_id":{"value":"f"},"agent_id":{"value":"a"},"hostname":"h","resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":2}}]}]}}`},
		{`{"type":"SUBSCRIBED","subscribed":{"framework_id":{"value":"f"},"master_info":{"capabilities":[{"type":"A"},{"type":"B"},{"type":"C"}]}}}`},
		{`{"type":"ERROR","error":{"message":"x"}}`, `{"type":"RESCIND"}`, `{"type":"FAILURE"}`, `null`, `[]`, `"UPDATE"`},
	} {
		f.Add(frameAll(docs...))
	}
	f.Add([]byte("9227000000000000000\n"))
	f.Add([]byte("3\n{}}"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		var events []event
		fuzzing.Bounded(t, "decode", func() {
			dec := mesosframe.JSONCodec.NewDecoder(func() framing.Reader { return recordio.NewReader(bytes.NewReader(stream)) })
			for range len(stream)/2 + 1 {
				var ev event
				if dec.Decode(&ev) != nil {
					return
				}
				events = append(events, ev)
			}
		})
		if !utf8.Valid(stream) {
			return // mesos-go's decoders keep invalid UTF-8 that encoding/json replaces: no round trip
		}
		for _, ev := range events {
			b, err := json.Marshal(&ev.Event)
			if err != nil {
				t.Fatalf("event %+v from %q does not encode: %v", ev.Event, stream, err)
			}
			var back event
			if err := back.UnmarshalJSON(b); err != nil || !reflect.DeepEqual(back.Event, ev.Event) {
				t.Fatalf("event %s from %q does not decode back the same (%v)", b, stream, err)
			}
		}
	})
}

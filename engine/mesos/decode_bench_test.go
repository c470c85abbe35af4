package mesos

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mesos/mesos-go/api/v1/lib/encoding/framing"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"

	"github.com/ejcloud/elasticjob/internal/mesosframe"
)

// BenchmarkDecodeUpdates decodes status updates the way the client reads
// the subscription stream (RecordIO frames, the guard, the tolerant event
// decoder): the scheduler reads one per task state change.
func BenchmarkDecodeUpdates(b *testing.B) {
	const n = 1024
	docs := make([]string, n)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"type":"UPDATE","update":{"status":{"task_id":{"value":"job-%d@-@0@-@READY@-@agent-%d@-@0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"},`+
			`"state":"TASK_FINISHED","source":"SOURCE_EXECUTOR","agent_id":{"value":"3f0b6a52-9c1e-4d7a-b1f2-8e4c5d6a7b8c-S%d"},`+
			`"executor_id":{"value":"ejcloud-executor@-@app-%d"},"timestamp":1.7638e9,"uuid":"AAECAwQFBgcICQoLDA0ODw=="}}}`, i, i%1000, i%1000, i%50)
	}
	stream := frameAll(docs...)
	b.SetBytes(int64(len(stream) / n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		dec := mesosframe.JSONCodec.NewDecoder(func() framing.Reader { return recordio.NewReader(bytes.NewReader(stream)) })
		for j := 0; j < n && i < b.N; j, i = j+1, i+1 {
			var ev event
			if err := dec.Decode(&ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}

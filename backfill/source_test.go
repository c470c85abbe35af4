package backfill

import (
	"encoding/json"
	"maps"
	"testing"
	"time"
)

// Records stored before a backfill named one source (a jobName or a
// workflowName beside the namespace and the key) load as that source,
// and a backfill is stored in the same fields, so the records of either
// version read alike.
func TestRecordsStoredBeforeTheSourceLoad(t *testing.T) {
	for _, tc := range []struct {
		stored string
		want   Source
		key    string
	}{
		{`{"id":"bf-1","namespace":"default","jobName":"report","key":"report","from":"2025-03-01T00:00:00Z","to":"2025-03-01T01:00:00Z","concurrency":2,"state":"RUNNING","total":6,"next":1,"succeeded":0,"failed":0,"skipped":0,"createdAt":"2025-03-02T00:00:00Z","updatedAt":"2025-03-02T00:00:00Z"}`,
			JobSource("default", "report"), "report"},
		{`{"id":"bf-2","namespace":"pay","jobName":"report","key":"pay~report","from":"2025-03-01T00:00:00Z","to":"2025-03-01T01:00:00Z","concurrency":1,"state":"DONE","total":1,"next":1,"succeeded":1,"failed":0,"skipped":0,"createdAt":"2025-03-02T00:00:00Z","updatedAt":"2025-03-02T00:00:00Z"}`,
			JobSource("pay", "report"), "pay~report"},
		{`{"id":"bf-3","namespace":"pay","workflowName":"nightly","key":"pay~nightly","from":"2025-03-01T00:00:00Z","to":"2025-03-01T01:00:00Z","concurrency":1,"state":"RUNNING","total":2,"next":0,"succeeded":0,"failed":0,"skipped":0,"createdAt":"2025-03-02T00:00:00Z","updatedAt":"2025-03-02T00:00:00Z"}`,
			WorkflowSource("pay", "nightly"), "pay~nightly"},
	} {
		var b Backfill
		if err := json.Unmarshal([]byte(tc.stored), &b); err != nil {
			t.Fatal(err)
		}
		if b.Source != tc.want || b.Key() != tc.key || b.IsWorkflow() != tc.want.IsWorkflow() || b.Total == 0 || b.From.IsZero() {
			t.Fatalf("loaded %+v (key %q), want source %+v key %q", b, b.Key(), tc.want, tc.key)
		}
		again, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var was, now map[string]any
		_ = json.Unmarshal([]byte(tc.stored), &was)
		_ = json.Unmarshal(again, &now)
		if !maps.EqualFunc(was, now, func(a, b any) bool { return a == b }) {
			t.Fatalf("stored again as\n%s\nwas\n%s", again, tc.stored)
		}
	}
}

func TestNewNamesOneSource(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	b := New("bf", WorkflowSource("pay", "nightly"), t0, t0.Add(time.Hour), 0, []time.Time{t0}, "me", t0)
	if b.JobName() != "" || b.WorkflowName() != "nightly" || b.Key() != "pay~nightly" || b.Concurrency != 1 {
		t.Fatalf("%+v", b)
	}
	if b.RunKey(t0) == New("bf", JobSource("other", "nightly"), t0, t0, 1, nil, "", t0).RunKey(t0) {
		t.Fatal("run keys of two namespaces meet")
	}
}

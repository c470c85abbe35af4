package mesos

import (
	"testing"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// realSubscribed is shaped like a Mesos 1.11 SUBSCRIBED event (SPEC §9): capabilities holding
// `{}` and names newer than the v0.0.11 protos, a packed-integer ip, and unknown fields.
const realSubscribed = `{"type":"SUBSCRIBED","subscribed":{"framework_id":{"value":"fw-real"},
 "heartbeat_interval_seconds":15.0,
 "master_info":{"id":"m-1","ip":16777343,"port":5050,"pid":"master@127.0.0.1:5050","hostname":"localhost",
  "version":"1.11.0","address":{"hostname":"localhost","ip":"127.0.0.1","port":5050},
  "capabilities":[{"type":"AGENT_UPDATE"},{},{"type":"QUOTA_V2"},{"type":"SOMETHING_NEWER"}],
  "brand_new_field":{"nested":[1,2,3]}},
 "unknown_sibling":true}}`

func TestDecodeToleratesRealMasterSubscribed(t *testing.T) {
	var ev event
	if err := ev.UnmarshalJSON([]byte(realSubscribed)); err != nil {
		t.Fatalf("decode: %v", err)
	}
	sub := ev.GetSubscribed()
	if ev.Type != scheduler.Event_SUBSCRIBED || sub.GetFrameworkID().GetValue() != "fw-real" ||
		sub.GetHeartbeatIntervalSeconds() != 15 {
		t.Fatalf("event = %v", ev.String())
	}
	mi := sub.GetMasterInfo()
	if mi.GetIP() != 16777343 || mi.GetVersion() != "1.11.0" || len(mi.Capabilities) != 4 {
		t.Fatalf("master_info = %v", mi)
	}
}

func TestDecodeKeepsUnknownStatusNames(t *testing.T) {
	var ev event
	raw := `{"type":"UPDATE","update":{"status":{"task_id":{"value":"t"},"state":"TASK_FROM_THE_FUTURE",
	 "reason":"REASON_FROM_THE_FUTURE","source":"SOURCE_AGENT","agent_id":{"value":"a"}}}}`
	if err := ev.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatalf("decode: %v", err)
	}
	s := toStatus(ev.GetUpdate().Status, &ev)
	if s.State != "TASK_FROM_THE_FUTURE" || s.Reason != "REASON_FROM_THE_FUTURE" || s.Source != "SOURCE_AGENT" ||
		s.TaskID != "t" || s.AgentID != "a" {
		t.Fatalf("status = %+v", s)
	}
}

func TestDecodeUnknownEventTypeIsIgnorable(t *testing.T) {
	var ev event
	if err := ev.UnmarshalJSON([]byte(`{"type":"EVENT_FROM_THE_FUTURE","future":{}}`)); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if ev.Type != scheduler.Event_UNKNOWN {
		t.Fatalf("type = %v", ev.Type)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	var ev event
	if err := ev.UnmarshalJSON([]byte(`{"type":`)); err == nil {
		t.Fatal("want an error for truncated JSON")
	}
}

func TestSubscribeOverStreamWithRealMasterJSON(t *testing.T) {
	m := newFakeMaster(t)
	h := newRecHandler()
	startClient(t, m, Config{}, h)
	sub := m.nextSub()
	sub.send(realSubscribed, `{"type":"EVENT_FROM_THE_FUTURE"}`,
		`{"type":"UPDATE","update":{"status":{"task_id":{"value":"t"},"state":"TASK_FROM_THE_FUTURE"}}}`)
	if got := recv(t, h.subscribed, "Subscribed"); got != "fw-real" {
		t.Fatalf("Subscribed(%q)", got)
	}
	if s := recv(t, h.updates, "Update"); s.State != "TASK_FROM_THE_FUTURE" {
		t.Fatalf("update state = %q", s.State)
	}
}

// A TASK_UNREACHABLE carries when the master lost the agent
// (unreachable_time), the same in every reconciliation answer.
func TestDecodeUnreachableTime(t *testing.T) {
	var ev event
	raw := `{"type":"UPDATE","update":{"status":{"task_id":{"value":"t"},"state":"TASK_UNREACHABLE","reason":"REASON_RECONCILIATION",
	 "source":"SOURCE_MASTER","agent_id":{"value":"a"},"unreachable_time":{"nanoseconds":1700000000250000000}}}}`
	if err := ev.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatalf("decode: %v", err)
	}
	s := toStatus(ev.GetUpdate().Status, &ev)
	if s.State != "TASK_UNREACHABLE" || !s.UnreachableSince.Equal(time.Unix(1700000000, 250e6)) {
		t.Fatalf("status = %+v", s)
	}
	raw = `{"type":"UPDATE","update":{"status":{"task_id":{"value":"t"},"state":"TASK_RUNNING"}}}`
	if err := ev.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if s := toStatus(ev.GetUpdate().Status, &ev); !s.UnreachableSince.IsZero() {
		t.Fatalf("a running task unreachable since %v", s.UnreachableSince)
	}
}

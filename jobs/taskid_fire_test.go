package jobs

import (
	"testing"
	"time"
)

// A fire's task id is a pure function of the fire: the same arguments give
// the same id (no agent in it), another execution or attempt another one,
// and it parses as every task id does, with the fire's instant in its UUID.
func TestFireTaskID(t *testing.T) {
	at := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	a := FireTaskID("ns~job", 2, KindReady, "ready|1|2", at)
	if b := FireTaskID("ns~job", 2, KindReady, "ready|1|2", at); a != b {
		t.Fatalf("same fire, two ids: %s, %s", a, b)
	}
	if a.AgentID != "" || a.UUID[14] != '8' {
		t.Fatalf("%s: want no agent and a version 8 UUID", a)
	}
	got, err := ParseTaskID(a.String())
	if err != nil || got != a {
		t.Fatalf("ParseTaskID(%s) = %+v, %v", a, got, err)
	}
	if ts, ok := UUIDTime(a.UUID); !ok || !ts.Equal(at) {
		t.Fatalf("UUIDTime(%s) = %s, %v; want %s", a.UUID, ts, ok, at)
	}
	seen := map[string]string{a.String(): "first"}
	for name, id := range map[string]TaskID{
		"another execution": FireTaskID("ns~job", 2, KindReady, "ready|1|3", at),
		"another shard":     FireTaskID("ns~job", 1, KindReady, "ready|1|2", at),
		"another job":       FireTaskID("ns~jo", 2, KindReady, "ready|1|2", at),
		"a failover":        FireTaskID("ns~job", 2, KindFailover, "ready|1|2", at),
		"parts not mixed":   FireTaskID("ns~job", 2, KindReady, "ready|1|2\x00", at),
	} {
		if prev, ok := seen[id.String()]; ok {
			t.Fatalf("%s has the id of %s: %s", name, prev, id)
		}
		seen[id.String()] = name
	}
}

// Ids of older versions and of the original's registry still parse: the
// agent part set, a version 4 or 7 UUID.
func TestOldTaskIDsParse(t *testing.T) {
	for _, s := range []string{
		"job@-@0@-@READY@-@agent-1@-@0b4e3a2c-9f1d-4c5e-8a7b-6d5c4b3a2f10",
		"job@-@3@-@FAILOVER@-@20231010-000001-S0@-@018bf1a2-9f1d-7c5e-8a7b-6d5c4b3a2f10",
	} {
		id, err := ParseTaskID(s)
		if err != nil || id.AgentID == "" || id.String() != s {
			t.Fatalf("ParseTaskID(%s) = %+v, %v", s, id, err)
		}
	}
}

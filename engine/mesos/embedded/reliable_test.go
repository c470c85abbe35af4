package embedded

import (
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

func pendingOf(uuids ...string) []pendingUpdate {
	var out []pendingUpdate
	for _, u := range uuids {
		out = append(out, pendingUpdate{status: mesos.TaskStatus{UUID: []byte(u)}})
	}
	return out
}

func TestClassifyUpdate(t *testing.T) {
	acked := map[string]bool{"u1": true}
	cases := []struct {
		name    string
		pending []pendingUpdate
		uuid    string
		want    updateKind
	}{
		{"new", nil, "u2", updateNew},
		{"new behind a pending one", pendingOf("u2"), "u3", updateNew},
		{"acknowledged already (an executor resending after a restart)", nil, "u1", updateAcked},
		{"the pending head again", pendingOf("u2", "u3"), "u2", updateDuplicate},
		{"a queued one again", pendingOf("u2", "u3"), "u3", updateDuplicate},
	}
	for _, tc := range cases {
		if got := classifyUpdate(acked, tc.pending, []byte(tc.uuid)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAcceptsAck(t *testing.T) {
	cases := []struct {
		name    string
		pending []pendingUpdate
		uuid    string
		want    bool
	}{
		{"the forwarded head", pendingOf("u1", "u2"), "u1", true},
		{"a queued update not forwarded yet", pendingOf("u1", "u2"), "u2", false},
		{"nothing pending", nil, "u1", false},
		{"unknown", pendingOf("u1"), "zz", false},
	}
	for _, tc := range cases {
		if got := acceptsAck(tc.pending, []byte(tc.uuid)); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNextBackoff(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{time.Second, 2 * time.Second},
		{4 * time.Minute, 8 * time.Minute},
		{6 * time.Minute, maxRetry},
		{maxRetry, maxRetry},
	} {
		if got := nextBackoff(tc.in); got != tc.want {
			t.Errorf("nextBackoff(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if finishedKept(false) != maxDone || finishedKept(true) != maxSimDone {
		t.Error("finishedKept")
	}
}

func TestDoomedSandboxes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	runs := []archived{
		{dir: "/old", ended: now.Add(-2 * time.Hour)},
		{dir: "/live", ended: now.Add(-3 * time.Hour)},
		{dir: "/young", ended: now.Add(-time.Minute)},
		{dir: "/exact", ended: now.Add(-time.Hour)},
	}
	live := map[string]*executor{"/live": {}}
	cases := []struct {
		name   string
		maxAge time.Duration
		want   []string
	}{
		{"an hour: old and exactly an hour, never a live one", time.Hour, []string{"/old", "/exact"}},
		{"a full disk (age 0): all but the live one", 0, []string{"/old", "/young", "/exact"}},
		{"a week: nothing", 7 * 24 * time.Hour, nil},
	}
	for _, tc := range cases {
		got := doomedSandboxes(runs, live, tc.maxAge, now)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

package embedded

import (
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

func TestAdmitSubscription(t *testing.T) {
	removed := map[string]bool{"gone": true}
	cases := []struct {
		name    string
		closing bool
		mode    string
		id      string
		want    int // HTTP status; 0: admitted
	}{
		{"a new framework", false, RecoverReconnect, "", 0},
		{"a framework subscribing again", false, RecoverReconnect, "fw-1", 0},
		{"the master stops", true, RecoverReconnect, "fw-1", 503},
		{"the agent cleans up an earlier run", false, RecoverCleanup, "", 503},
		{"a torn-down framework", false, RecoverReconnect, "gone", 403},
		{"stopping wins over torn down", true, RecoverReconnect, "gone", 503},
	}
	for _, tc := range cases {
		herr := admitSubscription(tc.closing, tc.mode, tc.id, removed)
		got := 0
		if herr != nil {
			got = herr.code
		}
		if got != tc.want {
			t.Errorf("%s: got %d (%v), want %d", tc.name, got, herr, tc.want)
		}
	}
}

func TestDecideKill(t *testing.T) {
	cases := []struct {
		name string
		t    *task
		want killAction
	}{
		{"unknown task: reconciliation", nil, killUnknown},
		{"finished", &task{state: mesos.TASK_FINISHED, launched: true}, killEnded},
		{"killed before delivery", &task{state: mesos.TASK_KILLED}, killEnded},
		{"running at its executor", &task{state: mesos.TASK_RUNNING, launched: true}, killAtExecutor},
		{"sent, not started yet", &task{state: mesos.TASK_STAGING, launched: true}, killAtExecutor},
		{"queued for an executor that has not subscribed", &task{state: mesos.TASK_STAGING}, killQueued},
	}
	for _, tc := range cases {
		if got := decideKill(tc.t); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

package embedded

import "testing"

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

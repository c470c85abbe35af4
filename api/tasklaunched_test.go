package api_test

import (
	"strings"
	"testing"
)

// TestLogOfAMadeUpTaskIsRefused: a task id the scheduler never launched
// (not running, not in history) names a directory the task could have
// made in its own sandbox, linking to anything: its log is refused before
// the engine reads anything, as is an id that is a path.
func TestLogOfAMadeUpTaskIsRefused(t *testing.T) {
	tn := twoTeamsAPI(t)
	if w := tn.call("GET", "/api/job/logs/"+tn.payTask+"?namespace=pay", "", "alice", "secret"); w.Code != 200 {
		t.Fatalf("the running task's log: %d %s", w.Code, w.Body)
	}
	for name, id := range map[string]string{
		"another shard": strings.Replace(tn.payTask, "@-@0@-@", "@-@1@-@", 1), // shard 1 never ran
		"another uuid":  tn.payTask[:strings.LastIndex(tn.payTask, "@-@")] + "@-@made-up",
		"a path":        "nightly@-@0@-@READY@-@a%2F..@-@u",
	} {
		w := tn.call("GET", "/api/job/logs/"+id+"?namespace=pay", "", "alice", "secret")
		if w.Code < 400 || strings.Contains(w.Body.String(), secret) {
			t.Errorf("%s: %d %s; want it refused", name, w.Code, w.Body)
		}
	}
}

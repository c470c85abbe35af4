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

// TestTaskFilesRoutes: a task's files are listed and downloaded only for
// a task the scheduler launched, by a clean relative path; an engine
// without the capability answers 501.
func TestTaskFilesRoutes(t *testing.T) {
	tn := twoTeamsAPI(t)
	madeUp := strings.Replace(tn.payTask, "@-@0@-@", "@-@1@-@", 1)
	for _, c := range []struct {
		target string
		code   int
	}{
		{"/api/job/tasks/" + tn.payTask + "/files?namespace=pay", 501}, // this engine lists no files
		{"/api/job/tasks/" + tn.payTask + "/files/download?namespace=pay&path=work/report.txt", 501},
		{"/api/job/tasks/" + madeUp + "/files?namespace=pay", 404},
		{"/api/job/tasks/" + madeUp + "/files/download?namespace=pay&path=stdout", 404},
		{"/api/job/tasks/" + tn.payTask + "/files/download?namespace=pay&path=../x", 400},
		{"/api/job/tasks/" + tn.payTask + "/files/download?namespace=pay&path=/etc/passwd", 400},
		{"/api/job/tasks/" + tn.payTask + "/files/download?namespace=pay", 400},
		{"/api/job/tasks/" + tn.payTask + "/files?namespace=pay&path=work/..", 400},
		{"/api/job/tasks/" + tn.payTask + "/files?namespace=search", 404}, // pay's task, asked in search
	} {
		user, pass := "alice", "secret"
		if strings.Contains(c.target, "namespace=search") {
			user, pass = "bob", "hunter2"
		}
		if w := tn.call("GET", c.target, "", user, pass); w.Code != c.code || strings.Contains(w.Body.String(), secret) {
			t.Errorf("GET %s: %d %s; want %d", c.target, w.Code, w.Body, c.code)
		}
	}
}

package soak

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/soak/runlog"
)

func TestParseRunPost(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 1, 0, time.UTC)
	start := "ev=start\ntask=sk001@-@0@-@READY@-@@-@x\njob=sk001\nitem=1\nsource=NORMAL_TRIGGER\ntype=TRANSIENT\nterm=7\nqueued=2026-11-27T08:00:00.5Z\nparam=soak 0 k3-sk001\n"
	l, daemon, err := parseRunPost([]byte(start), at)
	if err != nil {
		t.Fatal(err)
	}
	if daemon || l.Ev != runlog.Start || l.Job != "sk001" || l.Item != 1 || l.Term == nil || *l.Term != 7 || l.Source != "NORMAL_TRIGGER" ||
		!l.Queued.Equal(time.Date(2026, 11, 27, 8, 0, 0, 5e8, time.UTC)) || l.Param != "soak 0 k3-sk001" || !l.At.Equal(at) {
		t.Errorf("start: %+v daemon=%v", l, daemon)
	}
	l, _, err = parseRunPost([]byte("ev=end\ntask=t1\ntype=TRANSIENT\n"), at)
	if err != nil || l.Ev != runlog.End || l.State != "TASK_FINISHED" || l.Task != "t1" {
		t.Errorf("end: %+v %v", l, err)
	}
	l, _, err = parseRunPost([]byte("ev=start\ntask=t2\njob=j\nitem=0\nterm=\nqueued=\n"), at)
	if err != nil || l.Term != nil || !l.Queued.IsZero() {
		t.Errorf("a start without term and queued: %+v %v", l, err)
	}
	for _, bad := range []string{"ev=start\n", "task=t\n", "ev=begin\ntask=t\n", "ev=start\ntask=t\nitem=x\n", "ev=start\ntask=t\nitem=0\nterm=z\n",
		"ev=start\ntask=t\nitem=0\nqueued=yesterday\n"} {
		if _, _, err := parseRunPost([]byte(bad), at); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestHTTPRecorderAppendsRuns: a transient task's start and end are two
// lines; a daemon task's ticks are one start and no end.
func TestHTTPRecorderAppendsRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	r, err := startHTTPRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string) int {
		resp, err := http.Post(r.url+"/run", "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, b := range []string{"ev=start\ntask=t1\njob=j\nitem=0\ntype=TRANSIENT\n", "ev=end\ntask=t1\ntype=TRANSIENT\n",
		"ev=start\ntask=d1\njob=d\nitem=0\ntype=DAEMON\n", "ev=end\ntask=d1\ntype=DAEMON\n", "ev=start\ntask=d1\njob=d\nitem=0\ntype=DAEMON\n"} {
		if c := post(b); c != http.StatusOK {
			t.Fatalf("%q: %d", b, c)
		}
	}
	if c := post("ev=start\n"); c != http.StatusBadRequest {
		t.Errorf("a post without a task: %d, want 400", c)
	}
	resp, err := http.Get(r.url + "/app.tgz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("app: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	lines, err := runlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, l.Ev+" "+l.Task)
	}
	if want := "start t1,end t1,start d1"; strings.Join(got, ",") != want {
		t.Errorf("lines %q, want %q", strings.Join(got, ","), want)
	}
}

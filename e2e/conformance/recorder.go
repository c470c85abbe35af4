package conformance

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// recorder serves the suite's app and collects what its runs report: "start TASKID" when a
// shard's process begins, "end TASKID" when it ends (a run killed or lost reports no end).
type recorder struct {
	srv  *httptest.Server
	file string // where ReportFile runs append their lines

	mu     sync.Mutex
	app    []byte  // the app's package (built once the server's address is known)
	posted []event // what ReportHTTP runs posted, in arrival order
}

// event is one report of a run.
type event struct {
	Kind, Task string
}

func newRecorder(t *testing.T, how Report) *recorder {
	t.Helper()
	r := &recorder{file: filepath.Join(t.TempDir(), "events")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app.tgz", func(w http.ResponseWriter, _ *http.Request) {
		r.mu.Lock()
		app := r.app
		r.mu.Unlock()
		_, _ = w.Write(app)
	})
	mux.HandleFunc("POST /event", func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 4096))
		kind, task, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		r.mu.Lock()
		r.posted = append(r.posted, event{kind, task})
		r.mu.Unlock()
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	app, err := harness.TarGz(harness.Scripts(map[string]string{"bin/run.sh": r.script(how)})...)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.app = app
	r.mu.Unlock()
	return r
}

// appURL is where the engines fetch the app from.
func (r *recorder) appURL() string { return r.srv.URL + "/app.tgz" }

// script is the app's bin/run.sh: it prints a line on stdout and one on stderr, reports its
// start, does what the job's parameter says ("sleep N", "fail") and reports its end.
func (r *recorder) script(how Report) string {
	report := `printf '%s %s\n' "$1" "$ELASTICJOB_TASK_ID" >> ` + r.file
	if how == ReportHTTP {
		report = `wget -q -O /dev/null --post-data "$1 $ELASTICJOB_TASK_ID" ` + r.srv.URL + "/event || echo 'recorder unreachable' >&2"
	}
	return `#!/bin/sh
rec() { ` + report + `; }
echo "conformance: shard $ELASTICJOB_SHARDING_ITEM of $ELASTICJOB_JOB_NAME runs"
echo "conformance: a line on stderr" >&2
rec start
set -- $ELASTICJOB_JOB_PARAMETER
case "$1" in
fail) echo "conformance: failing on purpose" >&2; rec end; exit 3 ;;
sleep) sleep "$2" ;;
esac
echo "conformance: shard $ELASTICJOB_SHARDING_ITEM done"
rec end
`
}

// events lists the reports of a job's runs in the order they came.
func (r *recorder) events(job string) []event {
	var all []event
	if b, err := os.ReadFile(r.file); err == nil {
		for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			if kind, task, ok := strings.Cut(l, " "); ok {
				all = append(all, event{kind, task})
			}
		}
	}
	r.mu.Lock()
	all = append(all, r.posted...)
	r.mu.Unlock()
	var out []event
	for _, e := range all {
		if strings.HasPrefix(e.Task, job+"@-@") {
			out = append(out, e)
		}
	}
	return out
}

// count counts a job's reports of one kind.
func (r *recorder) count(job, kind string) int {
	n := 0
	for _, e := range r.events(job) {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// tasks lists the distinct tasks that reported kind, in order.
func (r *recorder) tasks(job, kind string) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range r.events(job) {
		if e.Kind == kind && !seen[e.Task] {
			seen[e.Task] = true
			out = append(out, e.Task)
		}
	}
	return out
}

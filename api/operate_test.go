package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/engine"
)

func TestReconcileRateLimit(t *testing.T) {
	e := newEnv(t)
	const explicit, implicit = "/api/operate/reconcile/explicit", "/api/operate/reconcile/implicit"
	e.must(http.StatusNoContent, http.MethodPost, explicit, "")
	// Explicit and implicit are limited independently.
	e.must(http.StatusNoContent, http.MethodPost, implicit, "")

	r := e.request(http.MethodPost, explicit, "")
	e.wantError(r, http.StatusTooManyRequests, "Repeat explicit reconcile task in less than 10s.")
	if got := r.Header.Get("Retry-After"); got != "10" {
		t.Errorf("Retry-After = %q, want 10", got)
	}
	e.clock.Advance(9*time.Second + 500*time.Millisecond)
	r = e.request(http.MethodPost, implicit, "")
	e.wantError(r, http.StatusTooManyRequests, "Repeat implicit reconcile task")
	if got := r.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	e.clock.Advance(500 * time.Millisecond)
	e.must(http.StatusNoContent, http.MethodPost, explicit, "")
	e.must(http.StatusNoContent, http.MethodPost, implicit, "")
	if want := []bool{true, false, true, false}; !reflect.DeepEqual(e.ops.reconciles, want) {
		t.Errorf("Reconcile calls = %v, want %v (rejected calls must not reach the scheduler)", e.ops.reconciles, want)
	}

	// A failing reconcile is a 503 and still counts against the limit.
	e.clock.Advance(10 * time.Second)
	e.ops.reconErr = errors.New("master unreachable")
	e.wantError(e.request(http.MethodPost, explicit, ""), http.StatusServiceUnavailable, "master unreachable")
	e.must(http.StatusTooManyRequests, http.MethodPost, explicit, "")
}

func TestOperateWithoutScheduler(t *testing.T) {
	e := newEnv(t, withoutOps())
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/operate/reconcile/explicit"},
		{"POST", "/api/operate/reconcile/implicit"},
		{"GET", "/api/operate/sandbox?appName=app"},
		{"GET", "/api/operate/cluster"},
		{"GET", "/api/job/logs/t?stream=stderr"},
	} {
		r := e.request(tc.method, tc.path, "")
		e.wantError(r, http.StatusServiceUnavailable, "the scheduler is not running")
		if msg := r.message(t); msg != "the scheduler is not running" {
			t.Errorf("%s %s: message %q, want exactly %q", tc.method, tc.path, msg, "the scheduler is not running")
		}
	}
	// The registry side of the API works without the scheduler.
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "job")
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/job/enable", "")
}

// Every range answers in one format chosen apart from it: JSON when the
// client asks for it (Accept or format=json), text/plain with the chunk's
// facts in X-Log-* headers otherwise (issue 32: tail used to answer JSON
// and full=true text).
func TestTaskLog(t *testing.T) {
	const task = "my_job@-@0@-@READY@-@agent-1@-@uuid"
	const path = "/api/job/logs/" + task
	tests := []struct {
		name, query string
		want        logCall
	}{
		{"default is the stdout tail", "", logCall{task, "stdout", -64 << 10, 64 << 10}},
		{"stderr tail", "?stream=stderr&tail=100", logCall{task, "stderr", -100, 100}},
		{"tail capped", "?tail=999999999999", logCall{task, "stdout", -64 << 20, 64 << 20}},
		{"range", "?stream=stderr&offset=4096&length=512", logCall{task, "stderr", 4096, 512}},
		{"offset default length", "?offset=7", logCall{task, "stdout", 7, 64 << 10}},
		{"offset zero", "?offset=0&length=1", logCall{task, "stdout", 0, 1}},
		{"length capped", "?offset=1&length=999999999999", logCall{task, "stdout", 1, 64 << 20}},
		{"full", "?stream=stderr&full=true", logCall{task, "stderr", 0, 64 << 20}},
		{"full wins over tail", "?full=true&tail=5", logCall{task, "stdout", 0, 64 << 20}},
		{"full=false is the tail", "?full=false", logCall{task, "stdout", -64 << 10, 64 << 10}},
	}
	sep := func(q string) string {
		if q == "" {
			return "?"
		}
		return q + "&"
	}
	for _, tc := range tests {
		for _, form := range []struct {
			name, query string
			hdr         []string
			json        bool
		}{
			{"text by default", tc.query, nil, false},
			{"json by Accept", tc.query, []string{"Accept", "application/json"}, true},
			{"json by format", sep(tc.query) + "format=json", nil, true},
			{"text by format", sep(tc.query) + "format=text", []string{"Accept", "application/json"}, false},
			{"text by Accept", tc.query, []string{"Accept", "text/plain, application/json"}, false},
		} {
			t.Run(tc.name+"/"+form.name, func(t *testing.T) {
				e := newEnv(t)
				e.running(task)
				r := e.request(http.MethodGet, path+form.query, "", form.hdr...)
				if r.Code != http.StatusOK {
					t.Fatalf("status %d: %s", r.Code, r.Body)
				}
				if len(e.ops.logCalls) != 1 || e.ops.logCalls[0] != tc.want {
					t.Fatalf("TaskLog calls = %+v, want [%+v]", e.ops.logCalls, tc.want)
				}
				if !form.json {
					h := r.Header
					if ct := h.Get("Content-Type"); ct != "text/plain; charset=utf-8" || r.String() != "hello world" ||
						h.Get("X-Log-Task") != task || h.Get("X-Log-Stream") != tc.want.Stream || h.Get("X-Log-Size") != "11" ||
						h.Get("X-Log-Offset") != strconv.FormatInt(max(tc.want.Offset, 0), 10) {
						t.Errorf("text answer: headers %v body %q", h, r)
					}
					return
				}
				chunk := decode[api.LogChunk](t, r)
				if chunk.TaskID != task || chunk.Stream != tc.want.Stream || chunk.Data != "hello world" || chunk.Size != 11 {
					t.Errorf("chunk = %+v", chunk)
				}
			})
		}
	}
	e := newEnv(t)
	e.running(task)
	golden(t, "task_log", e.must(http.StatusOK, http.MethodGet, path+"?stream=stderr&offset=3&length=8&format=json", "").Body)
}

// lines=N answers the last N lines, however long they are: the tail read
// grows until it holds them (ejctl logs --tail counts lines).
func TestTaskLogLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // one line longer than the first tail read
	file := "first\n" + long + "\nthird\nfourth\n"
	for _, tc := range []struct {
		name, file string
		n          int
		want       string
	}{
		{"last two", file, 2, "third\nfourth\n"},
		{"across a long line", file, 3, long + "\nthird\nfourth\n"},
		{"more than there are", file, 10, file},
		{"no final newline", "a\nb\nc", 2, "b\nc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.ops.logFile = tc.file
			e.running(logTask)
			r := e.request(http.MethodGet, "/api/job/logs/"+logTask+"?lines="+strconv.Itoa(tc.n), "")
			if r.Code != http.StatusOK || r.String() != tc.want {
				t.Fatalf("lines=%d: %d, %d bytes, want %d bytes (%q…)", tc.n, r.Code, len(r.Body), len(tc.want), r.String()[:min(20, len(r.Body))])
			}
			if off := r.Header.Get("X-Log-Offset"); off != strconv.Itoa(len(tc.file)-len(tc.want)) {
				t.Errorf("X-Log-Offset %s, want %d", off, len(tc.file)-len(tc.want))
			}
		})
	}
}

// logTask is the running task whose log the tests read.
const logTask = "t@-@0@-@READY@-@agent-1@-@u"

func TestTaskLogBadParams(t *testing.T) {
	const path = "/api/job/logs/" + logTask
	for _, tc := range []struct{ query, sub string }{
		{"?stream=stdin", "stream must be stdout or stderr"},
		{"?stream=STDOUT", "stream must be stdout or stderr"},
		{"?tail=-5", "tail must be a non-negative number"},
		{"?tail=abc", "tail must be a non-negative number"},
		{"?tail=1.5", "tail must be a non-negative number"},
		{"?offset=-1", "offset must be a non-negative number"},
		{"?offset=x", "offset must be a non-negative number"},
		{"?offset=1&length=-1", "length must be a non-negative number"},
		{"?offset=1&length=lots", "length must be a non-negative number"},
		{"?lines=0", "lines must be between 1 and 1000000"},
		{"?lines=-3", "lines must be a non-negative number"},
		{"?lines=1000001", "lines must be between 1 and 1000000"},
		{"?format=yaml", "format must be json or text"},
		{"?full=yes", "full must be true or false"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			e := newEnv(t)
			e.wantError(e.request(http.MethodGet, path+tc.query, ""), http.StatusBadRequest, tc.sub)
			if len(e.ops.logCalls) != 0 {
				t.Errorf("TaskLog called for a bad request: %+v", e.ops.logCalls)
			}
		})
	}
	// The scheduler's not-found passes through as 404.
	e := newEnv(t)
	e.running(logTask)
	e.ops.logErr = fmt.Errorf("%w: no task t", api.ErrNotFound)
	e.wantError(e.request(http.MethodGet, path, ""), http.StatusNotFound, "no task t")
	// So do the cluster engine's errors (package engine).
	for _, c := range []struct {
		err  error
		code int
	}{{engine.ErrNotFound, http.StatusNotFound}, {engine.ErrInvalid, http.StatusBadRequest}, {engine.ErrUnavailable, http.StatusServiceUnavailable}} {
		e.ops.logErr = fmt.Errorf("%w: the engine says so", c.err)
		e.wantError(e.request(http.MethodGet, path, ""), c.code, "the engine says so")
	}
}

func TestSandboxAndCluster(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	if r := e.must(http.StatusOK, http.MethodGet, "/api/operate/sandbox?appName=app", ""); r.String() != "[]" {
		t.Errorf("no sandboxes = %s, want []", r)
	}
	e.ops.sandboxes = []engine.Sandbox{{Hostname: "h", AgentID: "a", ExecutorID: "app@-@a", Path: "/var/sandbox/1"}}
	golden(t, "sandbox", e.must(http.StatusOK, http.MethodGet, "/api/operate/sandbox?appName=app", "").Body)
	e.wantError(e.request(http.MethodGet, "/api/operate/sandbox", ""), http.StatusBadRequest, "appName")
	e.wantError(e.request(http.MethodGet, "/api/operate/sandbox?appName=nope", ""), http.StatusNotFound, "Cannot find app 'nope'")
	if r := e.must(http.StatusOK, http.MethodGet, "/api/operate/cluster", ""); r.String() != `{"leader":"127.0.0.1:8899"}` {
		t.Errorf("cluster = %s", r)
	}
}

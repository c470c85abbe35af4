package executor

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
)

// jobData is a TaskData payload with the job settings given.
func jobData(appURL, bootstrap string, cfg jobs.Config) []byte {
	cfg.JobName, cfg.AppName, cfg.ShardingTotalCount = "job", "app", 2
	return jobs.TaskData{
		Version: jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{JobName: "job", TaskID: taskID, ShardingTotalCount: 2, ShardingItem: 1,
			ShardingParameter: "Shanghai", JobParameter: "p"},
		ExecutionSource: jobs.SourceNormal,
		Job:             cfg,
		App:             app.Config{AppName: "app", AppURL: appURL, BootstrapScript: bootstrap, AppCacheEnable: true},
	}.Marshal()
}

func stderrOf(t *testing.T, p *Pipeline) string {
	return readFile(t, p.Sandbox+"/tasks/"+taskID+"/stderr")
}

func TestScriptJobShellSyntaxAndContextArgument(t *testing.T) {
	cases := map[string]struct{ line, want string }{
		"quotes and variables": {`printf '%s|' "it's" "$ELASTICJOB_SHARDING_ITEM"`, `it's|1|{"jobName":"job"`},
		"pipe":                 {`echo piped | tr a-z A-Z; printf '<%s>' `, `PIPED` + "\n" + `<{"jobName":"job"`},
		"trailing semicolon":   {`printf '[%s]';`, `[{"jobName":"job"`},
		"context as $1":        {`for i in 1; do printf '$1=%s' "$1"; done`, `$1={"jobName":"job"`},
		"context in env":       {`printf '%s' "$ELASTICJOB_SHARDING_CONTEXT" #`, `{"jobName":"job"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := newPipeline(t)
			out, running := runTask(t, p, jobData(scriptURL(t, "x.sh", "#!/bin/sh\nexit 9\n"), "x.sh",
				jobs.Config{JobType: jobs.TypeScript, Props: map[string]string{"script.command.line": tc.line}}))
			if out.State != Finished || !running {
				t.Fatalf("%+v running=%v stderr=%q", out, running, stderrOf(t, p))
			}
			if got := stdout(t, p); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("stdout %q, want prefix %q", got, tc.want)
			}
		})
	}
}

func TestScriptJobWithoutAppRunsInSandbox(t *testing.T) {
	p := newPipeline(t)
	out, _ := runTask(t, p, jobData("", "", jobs.Config{JobType: jobs.TypeScript,
		Props: map[string]string{"script.command.line": "echo no app"}}))
	if out.State != Finished || !strings.HasPrefix(stdout(t, p), "no app {") {
		t.Fatalf("%+v %q", out, stdout(t, p))
	}
}

type seenRequest struct {
	method, path, ctx, contentType, body string
}

func httpServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, chan seenRequest) {
	seen := make(chan seenRequest, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- seenRequest{r.Method, r.URL.Path, r.Header.Get("shardingContext"), r.Header.Get("Content-Type"), string(b)}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

func TestHTTPJobSendsContextAndBody(t *testing.T) {
	srv, seen := httpServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "all good\n") })
	p := newPipeline(t)
	out, running := runTask(t, p, jobData("http://127.0.0.1:1/never-fetched.tgz", "bin/start.sh", jobs.Config{JobType: jobs.TypeHTTP,
		Props: map[string]string{"http.url": srv.URL + "/hook", "http.method": "post", "http.data": "a=1&b=2",
			"http.content.type": "application/x-www-form-urlencoded"}}))
	if out.State != Finished || !running || out.ExitCode != nil {
		t.Fatalf("%+v running=%v", out, running)
	}
	r := <-seen
	var sc jobs.ShardingContext
	if err := json.Unmarshal([]byte(r.ctx), &sc); err != nil || sc.ShardingItem != 1 || sc.TaskID != taskID || sc.ShardingParameter != "Shanghai" {
		t.Fatalf("shardingContext header %q: %v", r.ctx, err)
	}
	if r.method != "POST" || r.path != "/hook" || r.body != "a=1&b=2" || r.contentType != "application/x-www-form-urlencoded" {
		t.Fatalf("request %+v", r)
	}
	if got := stdout(t, p); got != "all good\n" {
		t.Fatalf("stdout %q", got)
	}
	if got := stderrOf(t, p); !strings.Contains(got, "http POST "+srv.URL+"/hook: 200 OK, 9 bytes") {
		t.Fatalf("stderr %q", got)
	}
}

func TestHTTPJobGetSendsNoBody(t *testing.T) {
	srv, seen := httpServer(t, func(w http.ResponseWriter, r *http.Request) {})
	out, _ := runTask(t, newPipeline(t), jobData("", "", jobs.Config{JobType: jobs.TypeHTTP,
		Props: map[string]string{"http.url": srv.URL, "http.data": "ignored"}}))
	if r := <-seen; out.State != Finished || r.method != "GET" || r.body != "" || r.ctx == "" {
		t.Fatalf("%+v %+v", out, r)
	}
}

func TestHTTPJobFailures(t *testing.T) {
	srv, _ := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/503":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "  down for maintenance "+strings.Repeat("x", 1000))
		case "/slow-headers":
			time.Sleep(2 * time.Second)
		case "/slow-body":
			w.Write([]byte("part"))
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Second)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/x"
	ln.Close()
	cases := map[string]struct {
		props map[string]string
		want  string
	}{
		"503": {map[string]string{"http.url": srv.URL + "/503", "http.method": "PUT"},
			"http PUT " + srv.URL + "/503: 503 Service Unavailable: down for maintenance " + strings.Repeat("x", 256-len("  down for maintenance "))},
		"refused": {map[string]string{"http.url": refused}, "http GET " + refused + ": dial tcp " + strings.TrimPrefix(refused[:len(refused)-2], "http://") + ": connect: connection refused"},
		"read timeout waiting for headers": {map[string]string{"http.url": srv.URL + "/slow-headers", "http.read.timeout.milliseconds": "100"},
			"http GET " + srv.URL + "/slow-headers: net/http: timeout awaiting response headers"},
		"read timeout in the body": {map[string]string{"http.url": srv.URL + "/slow-body", "http.read.timeout.milliseconds": "100"},
			"http GET " + srv.URL + "/slow-body: 200 OK: reading the response: no data for 100ms"},
		"bad timeout prop": {map[string]string{"http.url": srv.URL, "http.connect.timeout.milliseconds": "soon"},
			`HTTP job: props.http.connect.timeout.milliseconds must be a positive number of milliseconds, got "soon"`},
		"bad url": {map[string]string{"http.url": "ftp://x"}, `HTTP job: props.http.url must be an http(s) URL, got "ftp://x"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, _ := runTask(t, newPipeline(t), jobData("", "", jobs.Config{JobType: jobs.TypeHTTP, Props: tc.props}))
			if out.State != Failed || out.Message != tc.want {
				t.Fatalf("got %v %q\nwant %q", out.State, out.Message, tc.want)
			}
		})
	}
}

func TestTimeoutKillsTheRun(t *testing.T) {
	p := newPipeline(t)
	p.Grace = 100 * time.Millisecond
	url := scriptURL(t, "slow.sh", "#!/bin/sh\ntrap '' TERM\necho started\nsleep 3600\n")
	done := make(chan Outcome, 1)
	go func() { out, _ := runTask(t, p, jobData(url, "slow.sh", jobs.Config{TimeoutSeconds: 1})); done <- out }()
	var out Outcome
	select {
	case out = <-done:
	case <-time.After(failsafe): // failure bound only: an uncut run sleeps an hour
		t.Fatal("the run was not cut at its timeout (TERM is ignored: SIGKILL must follow)")
	}
	if out.State != Failed || out.Message != "timed out after 1s" {
		t.Fatalf("%+v", out)
	}
}

func TestTimeoutCancelsHTTPRequest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv, _ := httpServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	out, _ := runTask(t, newPipeline(t), jobData("", "", jobs.Config{JobType: jobs.TypeHTTP, TimeoutSeconds: 1,
		Props: map[string]string{"http.url": srv.URL, "http.read.timeout.milliseconds": "60000"}}))
	if out.State != Failed || out.Message != "timed out after 1s" {
		t.Fatalf("%+v", out)
	}
}

func TestErrorHandlers(t *testing.T) {
	url := scriptURL(t, "fail.sh", "#!/bin/sh\necho broken >&2\nexit 4\n")
	for handler, want := range map[string]Outcome{
		"":                   {State: Failed, Message: "exit code 4: broken"},
		jobs.HandlerLog:      {State: Failed, Message: "exit code 4: broken"},
		jobs.HandlerThrow:    {State: Failed, Message: "exit code 4: broken"},
		jobs.HandlerWebhook:  {State: Failed, Message: "exit code 4: broken"},
		jobs.HandlerIgnore:   {State: Finished, Message: "ignored failure: exit code 4: broken"},
		"IGNORE+fetch error": {State: Failed, Message: "fetch file:///nonexistent/app.tgz: open /nonexistent/app.tgz: no such file or directory"},
	} {
		t.Run(handler, func(t *testing.T) {
			u, h := url, handler
			if handler == "IGNORE+fetch error" {
				u, h = "file:///nonexistent/app.tgz", jobs.HandlerIgnore
			}
			out, _ := runTask(t, newPipeline(t), jobData(u, "fail.sh", jobs.Config{JobErrorHandlerType: h}))
			if out.State != want.State || out.Message != want.Message {
				t.Fatalf("got %v %q, want %v %q", out.State, out.Message, want.State, want.Message)
			}
			if handler != "IGNORE+fetch error" && (out.ExitCode == nil || *out.ExitCode != 4) {
				t.Fatalf("exit code %v", out.ExitCode)
			}
		})
	}
}

func TestIgnoreAppliesToTimeouts(t *testing.T) {
	out, _ := runTask(t, newPipeline(t), jobData(scriptURL(t, "s.sh", "#!/bin/sh\nexec sleep 30\n"), "s.sh",
		jobs.Config{TimeoutSeconds: 1, JobErrorHandlerType: jobs.HandlerIgnore}))
	if out.State != Finished || out.Message != "ignored failure: timed out after 1s" {
		t.Fatalf("%+v", out)
	}
}

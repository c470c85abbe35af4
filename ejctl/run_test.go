package ejctl

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runWith runs the program against base with env and returns its output
// and exit code.
func runWith(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: envOf(env)})
	return out.String(), errb.String(), code
}

func TestRunShowsTheAPIMessageAndExitCodes(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Cannot find job 'nope', please register first."}`))
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL, "EJCTL_TOKEN": "tok"} // no HOME: no config file, still fine
	_, errs, code := runWith(t, env, "job", "get", "nope")
	if code != ExitFailure || !strings.Contains(errs, "404 Not Found: Cannot find job 'nope', please register first.") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if gotAuth != "Bearer tok" {
		t.Errorf("Authorization %q, want the token from EJCTL_TOKEN", gotAuth)
	}
	for _, args := range [][]string{{"job", "get"}, {"nope"}, {"job", "ls", "--nope"}, {"-o", "yaml", "job", "ls"}, {"apply"}} {
		if _, errs, code := runWith(t, env, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage); stderr %q", args, code, ExitUsage, errs)
		}
	}
	if _, errs, code := runWith(t, env, "login", "-u", "admin"); code != ExitFailure || !strings.Contains(errs, "no config file") {
		t.Errorf("login without a config file: exit %d %q", code, errs)
	}
}

// `ejctl history my_job` (docs/jobs.md's watch command) lists that job's
// executions, as --job does; too many arguments are named in the message.
func TestHistoryTakesTheJobPositionally(t *testing.T) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/job/events/executions" {
			query = r.URL.RawQuery
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"total":0,"rows":[]}`))
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL}
	if _, errs, code := runWith(t, env, "history", "my_job"); code != ExitOK || !strings.Contains(query, "jobName=my_job") {
		t.Fatalf("history my_job: exit %d, query %q, stderr %q", code, query, errs)
	}
	if _, errs, code := runWith(t, env, "history", "a", "b"); code != ExitUsage || !strings.Contains(errs, "expected at most one argument, [JOB], got 2") {
		t.Errorf("history a b: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := runWith(t, env, "history", "a", "--job", "b"); code != ExitUsage || !strings.Contains(errs, "--job") {
		t.Errorf("history a --job b: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := runWith(t, env, "job", "ls", "x"); code != ExitUsage || !strings.Contains(errs, "expected no arguments, got 1") {
		t.Errorf("job ls x: exit %d, stderr %q", code, errs)
	}
}

// Every group answers an unknown subcommand with "unknown command" and
// exit 2 (`ejctl secret get x`, `ejctl token frob`, `ejctl ns frob`
// printed help and exited 0); with no subcommand it prints its help.
func TestEveryGroupRefusesUnknownCommands(t *testing.T) {
	env := map[string]string{"EJCTL_ADDR": "http://127.0.0.1:1"}
	var walk func(path []string, cmd *cobra.Command)
	checked := 0
	walk = func(path []string, cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if !sub.HasSubCommands() || sub.Name() == "completion" {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			checked++
			_, errs, code := runWith(t, env, append(p, "frob", "x")...)
			if code != ExitUsage || !strings.Contains(errs, `unknown command "frob"`) {
				t.Errorf("ejctl %s frob x: exit %d, stderr %q", strings.Join(p, " "), code, errs)
			}
			if out, _, code := runWith(t, env, p...); code != ExitOK || !strings.Contains(out, "Available Commands") {
				t.Errorf("ejctl %s: exit %d, stdout %q", strings.Join(p, " "), code, out)
			}
			walk(p, sub)
		}
	}
	walk(nil, (&cli{env: Env{}}).rootCmd())
	if checked < 5 { // app, job, ns, secret, token
		t.Fatalf("only %d groups checked", checked)
	}
}

// ejctl history shows a killed run as KILLED, not FAILED; --failed and
// --killed select each by the result column; sub-second durations share
// one unit (0ms beside 12ms); a job neither held nor in history is an
// error, as logs says, rather than an empty table.
func TestHistoryResults(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/job/events/executions" && r.URL.Query().Get("jobName") == "bogus":
			_, _ = w.Write([]byte(`{"total":0,"rows":[]}`))
		case r.URL.Path == "/api/job/events/executions":
			queries = append(queries, r.URL.Query().Get("result"))
			_, _ = w.Write([]byte(`{"total":2,"rows":[` +
				`{"jobName":"a","startTime":"2026-11-25T00:00:00Z","completeTime":"2026-11-25T00:00:00Z","durationMs":0,"success":false,"result":"KILLED","failureCause":"killed by alice"},` +
				`{"jobName":"a","startTime":"2026-11-25T00:00:00Z","completeTime":"2026-11-25T00:00:00Z","durationMs":12,"success":false,"result":"FAILED"}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"not found"}`))
		}
	}))
	defer srv.Close()
	env := map[string]string{"EJCTL_ADDR": srv.URL}
	out, errs, code := runWith(t, env, "history", "a")
	if code != ExitOK {
		t.Fatalf("history a: exit %d: %s", code, errs)
	}
	has(t, "history", out, "KILLED", "FAILED", "0ms", "12ms")
	if strings.Contains(out, " 0s ") {
		t.Fatalf("a zero duration in seconds beside milliseconds:\n%s", out)
	}
	runWith(t, env, "history", "a", "--failed")
	runWith(t, env, "history", "a", "--killed")
	if strings.Join(queries, ",") != ",FAILED,KILLED" {
		t.Fatalf("result filters %q", queries)
	}
	if _, errs, code := runWith(t, env, "history", "bogus"); code != ExitFailure || !strings.Contains(errs, "no job 'bogus' in namespace default, nor any history of one") {
		t.Fatalf("history bogus: exit %d, %q", code, errs)
	}
}

// ejctl completion with a shell it does not know is a usage error, not a
// help page and exit 0.
func TestCompletionOfAnUnknownShell(t *testing.T) {
	if _, errs, code := runWith(t, map[string]string{}, "completion", "bogus"); code != ExitUsage || !strings.Contains(errs, `no shell "bogus"`) {
		t.Fatalf("completion bogus: exit %d, %q", code, errs)
	}
}

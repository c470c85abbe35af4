package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two schedulers share one mesos-local: both subscribe as frameworks of
// their own, offers carry the flags' resources, and a scheduler that
// disconnects keeps its framework (failover_timeout) and gets it back
// when it subscribes again with its id.
func TestSchedulersShareOneMaster(t *testing.T) {
	in := start(t, "--port", "0", "--work-dir", t.TempDir(), "--cpus", "3", "--mem-mb", "1536",
		"--disk-mb", "2048", "--hostname", "agent-1", "--log-level", "debug")
	h1, id1, stop1 := subscribe(t, in.url, "")
	select {
	case offers := <-h1.offers:
		if len(offers) != 1 || offers[0].CPUs != 3 || offers[0].MemMB != 1536 || offers[0].Hostname != "agent-1" {
			t.Fatalf("offers = %+v, want one of cpus 3, mem 1536 on agent-1", offers)
		}
	case <-time.After(waitFor):
		t.Fatal("no offer")
	}
	_, id2, _ := subscribe(t, in.url, "")
	if id1 == "" || id2 == "" || id1 == id2 {
		t.Fatalf("framework ids %q and %q, want two distinct ids", id1, id2)
	}

	stop1()
	eventually(t, func() bool { active, ok := frameworks(t, in.url)[id1]; return ok && !active },
		"the disconnected framework to be kept, inactive")
	_, again, _ := subscribe(t, in.url, id1)
	if again != id1 {
		t.Fatalf("re-subscribed as %q, want the same framework %q", again, id1)
	}
	if fws := frameworks(t, in.url); !fws[id1] || !fws[id2] {
		t.Fatalf("frameworks after failover = %v, want both active", fws)
	}
}

// One work dir, one mesos-local: a second would kill the first's executors.
func TestWorkDirIsExclusive(t *testing.T) {
	dir := t.TempDir()
	start(t, "--port", "0", "--work-dir", dir)
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"--port", "0", "--work-dir", dir}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "in use by another running agent") {
		t.Fatalf("second run on %s: %v, want an in-use error", dir, err)
	}
	if out.Len() != 0 {
		t.Fatalf("the refused run printed %q", out.String())
	}
}

func TestPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	err = run(context.Background(), []string{"--port", port, "--work-dir", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("run on a taken port: %v, want a listen error", err)
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{nil, ""},
		{[]string{"--address", "::1"}, ""},
		{[]string{"--address", "localhost", "--port", "0"}, ""},
		{[]string{"--address", "0.0.0.0", "--allow-remote"}, ""},
		{[]string{"--address", "0.0.0.0"}, "refusing to listen on 0.0.0.0"},
		{[]string{"--address", "192.168.1.10"}, "--allow-remote"},
		{[]string{"--address", "example.com"}, "no authentication"},
		{[]string{"--address", ""}, "--address is empty"},
		{[]string{"--work-dir", ""}, "--work-dir is empty"},
		{[]string{"--port", "70000"}, "--port 70000"},
		{[]string{"--port", "x"}, "invalid value"},
		{[]string{"--cpus", "many"}, "invalid value"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--bogus"}, "not defined"},
		{[]string{"serve"}, `unexpected argument "serve"`},
	} {
		_, err := parseArgs(tc.args, &bytes.Buffer{})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error containing %q", tc.args, err, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), "--help"):
			t.Errorf("%q: %v does not point at --help", tc.args, err)
		}
	}
}

func TestNegativeResourcesRefused(t *testing.T) {
	err := run(context.Background(), []string{"--port", "0", "--work-dir", t.TempDir(), "--cpus", "-1"},
		&bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("run with --cpus -1: %v", err)
	}
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--help"}, &out, &bytes.Buffer{})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"Usage: mesos-local", "-port", "-work-dir", "-cpus", "-mem-mb", "-allow-remote",
		"-sim-agents", "TEST AND BENCHMARK MODE ONLY", "-cpu-profile"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

// --recover=cleanup with nothing left to stop ends at once, simulated
// cluster or not; a bad --recover is refused.
func TestRecoverCleanupWithNothingLeft(t *testing.T) {
	for _, extra := range [][]string{nil, {"--sim-agents", "2"}} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		args := append([]string{"--port", "0", "--work-dir", t.TempDir(), "--recover=cleanup"}, extra...)
		err := run(ctx, args, &out, &errb)
		cancel()
		if err != nil || !strings.Contains(out.String(), "cleanup done: shut down 0 executors") {
			t.Fatalf("%v: %v, stdout %q\n%s", args, err, out.String(), errb.String())
		}
	}
	err := run(context.Background(), []string{"--recover=later"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--recover") {
		t.Fatalf("--recover=later: %v", err)
	}
}

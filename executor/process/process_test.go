package process

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func shSpec(t *testing.T, script string) Spec {
	d := t.TempDir()
	return Spec{
		Path: "/bin/sh", Args: []string{"-c", script}, Dir: d,
		Env:    []string{"PATH=" + os.Getenv("PATH"), "GREETING=hello"},
		Stdout: filepath.Join(d, "stdout"), Stderr: filepath.Join(d, "stderr"),
		Grace: 5 * time.Second,
	}
}

func run(t *testing.T, ctx context.Context, spec Spec) Result {
	t.Helper()
	var pid int
	res, err := Run(ctx, spec, func(p int) { pid = p })
	if err != nil || pid == 0 {
		t.Fatalf("Run: %v (pid %d)", err, pid)
	}
	return res
}

func TestExitZero(t *testing.T) {
	spec := shSpec(t, `echo "$GREETING from $(pwd)"`)
	res := run(t, t.Context(), spec)
	if res.Message() != "" || res.ExitCode != 0 || res.Killed {
		t.Fatalf("%+v", res)
	}
	if b, _ := os.ReadFile(spec.Stdout); string(b) != "hello from "+spec.Dir+"\n" {
		t.Fatalf("stdout %q", b)
	}
}

func TestExitCodeWithStderrTail(t *testing.T) {
	res := run(t, t.Context(), shSpec(t, `echo first >&2; echo "it broke" >&2; exit 3`))
	if res.ExitCode != 3 || res.Message() != "exit code 3: first\nit broke" {
		t.Fatalf("%+v %q", res, res.Message())
	}
}

func TestStderrTailIsBounded(t *testing.T) {
	res := run(t, t.Context(), shSpec(t, `i=0; while [ $i -lt 500 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 1`))
	if len(res.StderrTail) > TailSize || !strings.HasSuffix(res.StderrTail, "line 499") {
		t.Fatalf("tail of %d bytes: ...%q", len(res.StderrTail), res.StderrTail[max(0, len(res.StderrTail)-20):])
	}
}

func TestSignal(t *testing.T) {
	res := run(t, t.Context(), shSpec(t, `kill -SEGV $$`))
	if res.Signal != syscall.SIGSEGV || res.Killed || res.Message() != "terminated by signal SIGSEGV" {
		t.Fatalf("%+v %q", res, res.Message())
	}
}

func TestStartFailure(t *testing.T) {
	spec := shSpec(t, "")
	spec.Path = filepath.Join(spec.Dir, "missing")
	if _, err := Run(t.Context(), spec, nil); err == nil {
		t.Fatal("started a missing program")
	}
}

// startWithGrandchild runs script, which must write a grandchild's pid to
// the FIFO "$1", and returns that pid once it is known.
func startWithGrandchild(t *testing.T, script string, ctx context.Context, spec Spec) (<-chan Result, int) {
	t.Helper()
	fifo := filepath.Join(spec.Dir, "pid.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	spec.Args = []string{"-c", script, "sh", fifo}
	out := make(chan Result, 1)
	go func() {
		res, err := Run(ctx, spec, nil)
		if err != nil {
			t.Error(err)
		}
		out <- res
	}()
	b, err := os.ReadFile(fifo) // blocks until the script writes it
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return out, pid
}

func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0] == "Z"
}

func TestKillTerminatesGroupIncludingGrandchildren(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	spec := shSpec(t, "")
	done, gc := startWithGrandchild(t, `sleep 1000 & echo $! > "$1"; wait`, ctx, spec)
	cancel(Kill{Grace: 10 * time.Second})
	res := <-done
	if !res.Killed || res.Signal != syscall.SIGTERM {
		t.Fatalf("%+v", res)
	}
	if !gone(gc) {
		t.Fatalf("grandchild %d survived", gc)
	}
}

func TestKillEscalatesToSIGKILL(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	spec := shSpec(t, "")
	// SIG_IGN is inherited, so both the shell and sleep ignore SIGTERM.
	done, gc := startWithGrandchild(t, `trap "" TERM; sleep 1000 & echo $! > "$1"; wait`, ctx, spec)
	cancel(Kill{Grace: 50 * time.Millisecond})
	res := <-done
	if !res.Killed || res.Signal != syscall.SIGKILL || !gone(gc) {
		t.Fatalf("%+v, grandchild gone: %v", res, gone(gc))
	}
}

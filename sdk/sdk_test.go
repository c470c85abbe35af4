package sdk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const failsafe = 20 * time.Second

// The test binary doubles as a job app (SDK_TEST_APP=1).
func TestMain(m *testing.M) {
	if os.Getenv("SDK_TEST_APP") == "1" {
		n := 0
		Run(JobFunc(func(ctx context.Context, sc ShardingContext) error {
			n++
			fmt.Printf("DONE %d error forged by the job's stdout\n", n) // must not reach the protocol
			if sc.JobParameter == "fail" {
				return fmt.Errorf("run %d failed\nin two lines", n)
			}
			return nil
		}))
	}
	os.Exit(m.Run())
}

const scJSON = `{"jobName":"j","taskId":"j@-@1@-@READY@-@a@-@u","shardingTotalCount":2,"jobParameter":"p","shardingItem":1,"shardingParameter":"B"}`

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestTransientRun(t *testing.T) {
	var got ShardingContext
	ok := JobFunc(func(ctx context.Context, sc ShardingContext) error { got = sc; return nil })
	fail := JobFunc(func(ctx context.Context, sc ShardingContext) error { return errors.New("no luck") })
	boom := JobFunc(func(ctx context.Context, sc ShardingContext) error { panic("kaboom") })
	cases := []struct {
		name   string
		job    SimpleJob
		args   []string
		getenv func(string) string
		code   int
		stderr string
	}{
		{"context as last argument", ok, []string{"x", scJSON}, env(), 0, ""},
		{"context from the environment", ok, []string{"x"}, env(EnvShardingContext, scJSON), 0, ""},
		{"job error", fail, []string{scJSON}, env(), 1, "error: no luck\n"},
		{"panic", boom, []string{scJSON}, env(), 1, "error: panic: kaboom\n"},
		{"no context", ok, nil, env(), 2, "elasticjob sdk: no sharding context: the ElasticJob executor passes it as the last argument and in ELASTICJOB_SHARDING_CONTEXT\n"},
		{"bad context", ok, []string{"{nope"}, env(), 2, "elasticjob sdk: the last argument is not a sharding context"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got = ShardingContext{}
			var stderr bytes.Buffer
			code := Main(t.Context(), tc.job, tc.args, tc.getenv, &stderr)
			if code != tc.code || !strings.HasSuffix(stderr.String(), tc.stderr) && !strings.HasPrefix(stderr.String(), tc.stderr) {
				t.Fatalf("exit %d stderr %q, want %d %q", code, stderr.String(), tc.code, tc.stderr)
			}
			if tc.code == 0 && (got.ShardingItem != 1 || got.ShardingParameter != "B" || got.TaskID == "") {
				t.Fatalf("context %+v", got)
			}
		})
	}
}

// protocolPeer drives Serve like the executor does.
type protocolPeer struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func serve(t *testing.T, ctx context.Context, job SimpleJob) *protocolPeer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &protocolPeer{in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() { p.done <- Serve(ctx, job, inR, outW, io.Discard); outW.Close() }()
	t.Cleanup(func() { inW.Close() })
	return p
}

func (p *protocolPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line); err != nil {
		t.Fatal(err)
	}
}

func (p *protocolPeer) recv(t *testing.T) string {
	t.Helper()
	c := make(chan string, 1)
	go func() { l, _ := p.out.ReadString('\n'); c <- l }()
	select {
	case l := <-c:
		return l
	case <-time.After(failsafe):
		t.Fatal("no DONE line")
		return ""
	}
}

func TestServeRoundTrip(t *testing.T) {
	var runs []string
	job := JobFunc(func(ctx context.Context, sc ShardingContext) error {
		runs = append(runs, sc.JobParameter)
		switch sc.JobParameter {
		case "fail":
			return errors.New("line one\nline two \\ end")
		case "wait":
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	p := serve(t, t.Context(), job)
	p.send(t, FormatRun("1", []byte(scJSON)))
	if got := p.recv(t); got != "DONE 1 ok\n" {
		t.Fatalf("got %q", got)
	}
	p.send(t, FormatRun("2", []byte(strings.Replace(scJSON, `"p"`, `"fail"`, 1))))
	got := p.recv(t)
	if got != "DONE 2 error line one\\nline two \\\\ end\n" {
		t.Fatalf("got %q", got)
	}
	if id, ok, msg, valid := ParseDone(strings.TrimSuffix(got, "\n")); id != "2" || ok || !valid || msg != "line one\nline two \\ end" {
		t.Fatalf("parsed %q %v %q %v", id, ok, msg, valid)
	}
	p.send(t, "RUN 3 {not json\n")
	if got := p.recv(t); !strings.HasPrefix(got, "DONE 3 error bad sharding context: ") {
		t.Fatalf("got %q", got)
	}
	p.send(t, FormatRun("4", []byte(strings.Replace(scJSON, `"p"`, `"wait"`, 1))))
	p.send(t, FormatRun("5", []byte(scJSON))) // while 4 runs
	if got := p.recv(t); got != "DONE 5 error run 4 is still in progress\n" {
		t.Fatalf("got %q", got)
	}
	p.send(t, FormatCancel("4"))
	if got := p.recv(t); got != "DONE 4 error context canceled\n" {
		t.Fatalf("got %q", got)
	}
	p.send(t, FormatRun("6", []byte(strings.Replace(scJSON, `"p"`, `"wait"`, 1))))
	p.in.Close() // end of input: the run in progress is cancelled and answered
	if got := p.recv(t); got != "DONE 6 error context canceled\n" {
		t.Fatalf("got %q", got)
	}
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(runs) != "[p fail wait wait]" {
		t.Fatalf("runs %v", runs)
	}
}

func TestServeStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	p := serve(t, ctx, JobFunc(func(ctx context.Context, sc ShardingContext) error { close(started); <-ctx.Done(); return ctx.Err() }))
	p.send(t, FormatRun("1", []byte(scJSON)))
	<-started
	cancel()
	if got := p.recv(t); got != "DONE 1 error context canceled\n" {
		t.Fatalf("got %q", got)
	}
	if err := <-p.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestEscape(t *testing.T) {
	for _, s := range []string{"", "plain", "a\nb", "a\\nb", "\r\n\\", `trailing \`, "ü\x00"} {
		e := Escape(s)
		if strings.ContainsAny(e, "\r\n") || Unescape(e) != s {
			t.Errorf("%q → %q → %q", s, e, Unescape(e))
		}
	}
}

type items struct {
	batches [][]int
	fetches int
	got     []int
}

func (d *items) FetchData(ctx context.Context, sc ShardingContext) ([]int, error) {
	d.fetches++
	if len(d.batches) == 0 {
		return nil, nil
	}
	b := d.batches[0]
	d.batches = d.batches[1:]
	return b, nil
}

func (d *items) ProcessData(ctx context.Context, sc ShardingContext, xs []int) error {
	d.got = append(d.got, xs...)
	return nil
}

func TestDataflow(t *testing.T) {
	d := &items{batches: [][]int{{1, 2}, {3}}}
	if err := DataflowStreaming[int](d, false).Execute(t.Context(), ShardingContext{}); err != nil || fmt.Sprint(d.got) != "[1 2]" || d.fetches != 1 {
		t.Fatalf("one-off: %v %v %d", err, d.got, d.fetches)
	}
	d = &items{batches: [][]int{{1, 2}, {3}}}
	if err := DataflowStreaming[int](d, true).Execute(t.Context(), ShardingContext{}); err != nil || fmt.Sprint(d.got) != "[1 2 3]" || d.fetches != 3 {
		t.Fatalf("streaming: %v %v %d", err, d.got, d.fetches)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d = &items{batches: [][]int{{1}}}
	if err := DataflowStreaming[int](d, true).Execute(ctx, ShardingContext{}); !errors.Is(err, context.Canceled) || d.fetches != 0 {
		t.Fatalf("cancelled: %v %d", err, d.fetches)
	}
	t.Setenv(EnvStreamingProcess, "true")
	d = &items{batches: [][]int{{1}, {2}}}
	if err := Dataflow[int](d).Execute(t.Context(), ShardingContext{}); err != nil || fmt.Sprint(d.got) != "[1 2]" {
		t.Fatalf("env streaming: %v %v", err, d.got)
	}
}

// TestResidentProcessOverFileDescriptors runs this test binary as a
// resident job process with the protocol on fds 3 and 4, as the executor
// does; the job's own stdout lines that look like protocol lines do not
// reach the protocol.
func TestResidentProcessOverFileDescriptors(t *testing.T) {
	runR, runW, _ := os.Pipe()
	doneR, doneW, _ := os.Pipe()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SDK_TEST_APP=1", EnvProtocol+"=1")
	cmd.ExtraFiles = []*os.File{runR, doneW}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	runR.Close()
	doneW.Close()
	lines := bufio.NewReader(doneR)
	io.WriteString(runW, FormatRun("7", []byte(scJSON)))
	if l, err := lines.ReadString('\n'); l != "DONE 7 ok\n" {
		t.Fatalf("got %q %v", l, err)
	}
	io.WriteString(runW, FormatRun("8", []byte(strings.Replace(scJSON, `"p"`, `"fail"`, 1))))
	if l, _ := lines.ReadString('\n'); l != "DONE 8 error run 2 failed\\nin two lines\n" {
		t.Fatalf("got %q", l)
	}
	runW.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if stdout.String() != "DONE 1 error forged by the job's stdout\nDONE 2 error forged by the job's stdout\n" {
		t.Fatalf("stdout %q", stdout.String())
	}
}

func TestProtocolWithoutDescriptors(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `exec "$0" 3<&- 4>&-`, os.Args[0])
	cmd.Env = append(os.Environ(), "SDK_TEST_APP=1", EnvProtocol+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "file descriptor 3 is not") {
		t.Fatalf("%v %s", err, out)
	}
}

package mesos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
)

// TestAgainstEmbeddedMaster runs the client against the embedded single-node master.
func TestAgainstEmbeddedMaster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := embedded.New(embedded.Config{WorkDir: t.TempDir(), CPUs: 4, MemMB: 2048,
		ExecutorRegistrationTimeout: 50 * time.Millisecond, ExecutorShutdownGrace: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Close() })

	h := newRecHandler()
	c := New(Config{URL: cluster.URL(), FrameworkName: "ej-test", BackoffMin: time.Millisecond,
		BackoffMax: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(testWriterFor(t), nil))})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	t.Cleanup(func() { cancel(); recv(t, done, "Run") })

	id := recv(t, h.subscribed, "Subscribed")
	if id == "" || c.FrameworkID() != id {
		t.Fatalf("framework id %q / %q", id, c.FrameworkID())
	}
	offers := recv(t, h.offers, "Offers")
	if len(offers) == 0 {
		t.Fatal("no offers")
	}
	o := offers[0]
	if o.AgentID != cluster.AgentID() || o.CPUs != 4 || o.MemMB != 2048 {
		t.Fatalf("offer = %+v", o)
	}

	// Explicit reconciliation of a task the master never saw: answered without a uuid.
	if err := c.Reconcile(ctx, []engine.TaskRef{{TaskID: "ghost", AgentID: o.AgentID}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if s := recv(t, h.updates, "Update"); s.TaskID != "ghost" || s.State == "" {
		t.Fatalf("reconcile answer = %+v", s)
	}

	// A launch built from the offer passes the master's validation: the task is not refused
	// (TASK_ERROR/TASK_DROPPED); the executor, which never subscribes, times out instead.
	launch := engine.TaskLaunch{TaskID: "t1", AgentID: o.AgentID, CPUs: 1, MemMB: 128,
		Executor: engine.ExecutorSpec{ID: "app@-@" + o.AgentID, CPUs: 0.5, MemMB: 64, Command: "sleep 30", Shell: true}}
	if err := c.Accept(ctx, []string{o.ID}, []engine.TaskLaunch{launch}, -1); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	s := recv(t, h.updates, "Update")
	if s.TaskID != "t1" || s.State == "TASK_ERROR" || s.State == "TASK_DROPPED" {
		t.Fatalf("launch refused: %+v", s)
	}
	// The reconciliation answer is handled after the failure update was acknowledged: the master
	// reports the terminal state, or TASK_GONE once the ack made it forget the task.
	if err := c.Reconcile(ctx, []engine.TaskRef{{TaskID: "t1", AgentID: o.AgentID}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if r := recv(t, h.updates, "Update"); r.TaskID != "t1" || (r.State != s.State && r.State != "TASK_GONE") {
		t.Fatalf("reconciled %+v, want %s or TASK_GONE", r, s.State)
	}
	if err := c.Suppress(ctx); err != nil {
		t.Fatalf("Suppress: %v", err)
	}
	// The master runs in the client's process: every call above and the
	// event stream went to it in process, over no connection.
	if n := connectionsTo(t, cluster.URL()); n != 0 {
		t.Fatalf("%d TCP connections to the master in this process, want none", n)
	}
	// ... in protobuf, which both ends know to the last enum value.
	if sess, _, err := c.current(); err != nil || sess.http != c.inproc {
		t.Fatalf("the session to the master in this process does not speak protobuf (err %v)", err)
	}
}

// connectionsTo counts the established TCP connections to rawURL's port
// (/proc/net/tcp and tcp6: the machine's, so any client's).
func connectionsTo(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(":%04X", port)
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) > 3 && strings.HasSuffix(fs[2], want) && fs[3] == "01" { // remote address, ESTABLISHED
				n++
			}
		}
	}
	return n
}

type tw struct{ t *testing.T }

func (w tw) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func testWriterFor(t *testing.T) io.Writer { return tw{t} }

// TestTaskJoinsForeignExecutorOnEmbedded: a second client instance of the same framework,
// whose ExecutorSpec differs (as another scheduler instance's would), sends a task for the
// executor the first instance started; it reads that executor's ExecutorInfo through
// GET_EXECUTORS, so the embedded master does not refuse the task as incompatible (TASK_ERROR).
func TestTaskJoinsForeignExecutorOnEmbedded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, err := embedded.New(embedded.Config{WorkDir: t.TempDir(), CPUs: 4, MemMB: 2048,
		ExecutorRegistrationTimeout: 2 * time.Second, ExecutorShutdownGrace: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Close() })
	spec := func(from string) engine.ExecutorSpec { // the executor never subscribes: it stays launching
		return engine.ExecutorSpec{ID: "app@-@" + cluster.AgentID(), CPUs: 0.5, MemMB: 64, Command: "sleep 30", Shell: true,
			Env: map[string]string{"STARTED_BY": from}}
	}
	run := func(fid string) (*Client, *recHandler, context.CancelFunc) {
		cctx, stop := context.WithCancel(ctx)
		h := newRecHandler()
		c := New(Config{URL: cluster.URL(), FrameworkID: fid, BackoffMin: time.Millisecond, BackoffMax: 10 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(testWriterFor(t), nil))})
		done := make(chan error, 1)
		go func() { done <- c.Run(cctx, h) }()
		t.Cleanup(func() { stop(); recv(t, done, "Run") })
		return c, h, stop
	}

	a, ha, stopA := run("")
	fid := recv(t, ha.subscribed, "Subscribed a")
	o := recv(t, ha.offers, "Offers a")[0]
	if err := a.Accept(ctx, []string{o.ID}, []engine.TaskLaunch{{TaskID: "t1", AgentID: o.AgentID, CPUs: 0.5, MemMB: 64,
		Executor: spec("a")}}, -1); err != nil {
		t.Fatal(err)
	}
	stopA()

	b, hb, _ := run(fid)
	recv(t, hb.subscribed, "Subscribed b")
	o = recv(t, hb.offers, "Offers b")[0]
	if err := b.Accept(ctx, []string{o.ID}, []engine.TaskLaunch{{TaskID: "t2", AgentID: o.AgentID, CPUs: 0.5, MemMB: 64,
		Executor: spec("b")}}, -1); err != nil {
		t.Fatal(err)
	}
	for {
		s := recv(t, hb.updates, "update of t2")
		if s.TaskID != "t2" {
			continue
		}
		if s.State == "TASK_ERROR" {
			t.Fatalf("t2 refused: %s", s.Message)
		}
		break // failed with its executor's registration timeout, as t1
	}
}

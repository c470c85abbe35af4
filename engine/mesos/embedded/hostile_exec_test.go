package embedded

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// TestHostileUpdateTaskIDs: an executor runs as its tenant and may send an
// UPDATE for a task id the agent does not know; the agent (root) keeps
// such a task's records under its checkpoint by that id. An id that is no
// Mesos task id (a path with .. or /, a NUL, empty) is refused, alone and
// in a batch, and nothing is written outside the checkpoint.
func TestHostileUpdateTaskIDs(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, checkpointing(""))
	s.launch(s.offer(), taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.25, 32))
	s.ack(s.update("a1"))
	tok := executorToken(t, c, "A")

	outside := t.TempDir()
	up := strings.Repeat("../", 40)
	ids := []string{
		up + strings.TrimPrefix(filepath.Join(outside, "planted"), "/"),
		"../a1",
		"..",
		".",
		"",
		"x\x00y",
		`..\..\x`,
		"tasks/../../x",
	}
	for _, id := range ids {
		if code, body := execCall(t, c, updateCall(s.fwID, "A", id, mesos.TASK_RUNNING), tok); code != http.StatusBadRequest {
			t.Errorf("UPDATE of task %q: %d %s, want 400", id, code, body)
		}
		if code, body := batchCall(t, c, tok, "application/x-protobuf", nil,
			updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING), updateCall(s.fwID, "A", id, mesos.TASK_RUNNING)); code != http.StatusBadRequest {
			t.Errorf("a batch with task %q: %d %s, want 400", id, code, body)
		}
	}
	// The same ids as a re-subscribing executor's unacknowledged updates:
	// dropped, the subscription served.
	sub := &execpb.Call{Type: execpb.Call_SUBSCRIBE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
		ExecutorID: mesos.ExecutorID{Value: "A"}, Subscribe: &execpb.Call_Subscribe{}}
	for _, id := range ids {
		sub.Subscribe.UnacknowledgedUpdates = append(sub.Subscribe.UnacknowledgedUpdates, *updateCall(s.fwID, "A", id, mesos.TASK_RUNNING).Update)
	}
	execSubscribe(t, c, sub, tok)
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("the agent wrote outside its checkpoint: %v", ents)
	}
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_UPDATE && ev.Update.Status.TaskID.Value != "a1" {
			t.Fatalf("a refused update reached the scheduler: %q", ev.Update.Status.TaskID.Value)
		}
	}
}

// TestHostileUpdatesOfTasksNotLaunched: an executor holds its own token
// (its tasks cannot read it, but a compromised executor can) and could
// name task ids of its own making in its UPDATEs; each would be a task in
// the agent's memory and an open records file below its checkpoint until
// it ended. Only tasks the agent launched into that executor are taken:
// made-up ids are refused (400) alone, in a batch and as a re-subscribing
// executor's unacknowledged updates, and leave nothing behind.
func TestHostileUpdatesOfTasksNotLaunched(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, checkpointing(""))
	s.launch(s.offer(), taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.25, 32))
	s.ack(s.update("a1"))
	tok := executorToken(t, c, "A")

	sub := &execpb.Call{Type: execpb.Call_SUBSCRIBE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
		ExecutorID: mesos.ExecutorID{Value: "A"}, Subscribe: &execpb.Call_Subscribe{}}
	for i := range 200 {
		id := fmt.Sprintf("made-up-%d", i)
		if code, body := execCall(t, c, updateCall(s.fwID, "A", id, mesos.TASK_RUNNING), tok); code != http.StatusBadRequest {
			t.Fatalf("UPDATE of made-up task %s: %d %s, want 400", id, code, body)
		}
		if i < 5 {
			if code, body := batchCall(t, c, tok, "application/x-protobuf", nil,
				updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING), updateCall(s.fwID, "A", id, mesos.TASK_RUNNING)); code != http.StatusBadRequest {
				t.Fatalf("a batch with made-up task %s: %d %s, want 400", id, code, body)
			}
		}
		sub.Subscribe.UnacknowledgedUpdates = append(sub.Subscribe.UnacknowledgedUpdates, *updateCall(s.fwID, "A", "replayed-"+id, mesos.TASK_RUNNING).Update)
	}
	execSubscribe(t, c, sub, tok)

	c.mu.Lock()
	var tasks []string
	for id := range c.frameworks[s.fwID].tasks {
		tasks = append(tasks, id)
	}
	var meta string
	for _, e := range c.frameworks[s.fwID].executors {
		meta = e.meta
	}
	c.mu.Unlock()
	if len(tasks) != 1 || tasks[0] != "a1" {
		t.Fatalf("the agent holds tasks %v, want only a1", tasks)
	}
	ents, err := os.ReadDir(filepath.Join(meta, "tasks"))
	if err != nil || len(ents) != 1 || ents[0].Name() != "a1.records" {
		t.Fatalf("records below the checkpoint: %v %v, want a1's only", ents, err)
	}
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_UPDATE && ev.Update.Status.TaskID.Value != "a1" {
			t.Fatalf("a refused update reached the scheduler: %q", ev.Update.Status.TaskID.Value)
		}
	}
	// Its own task's updates are still taken.
	if code, body := execCall(t, c, updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING), tok); code != http.StatusAccepted {
		t.Fatalf("UPDATE of its own task: %d %s", code, body)
	}
}

// execSubscribe subscribes as an executor with its token and returns once
// the agent answered 200 (its stream then closed).
func execSubscribe(t *testing.T, c *Cluster, call *execpb.Call, token string) {
	t.Helper()
	body, _ := json.Marshal(call)
	req, _ := http.NewRequest(http.MethodPost, c.URL()+"/api/v1/executor", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("SUBSCRIBE: %d %s", resp.StatusCode, b)
	}
}

// TestHostileUpdateFloodOfItsOwnTask: a compromised executor sends update
// after update (each a new uuid) for its own task: each was a record
// appended below the agent's checkpoint (root's data directory, measured
// against no tenant) and a pending update in memory while the scheduler
// had not acknowledged it. The updates one task takes from its executor
// are bounded, alone, in a batch and as a re-subscription's, and so is an
// update's size; a resent update (its uuid known) is still answered.
func TestHostileUpdateFloodOfItsOwnTask(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, checkpointing(""))
	s.launch(s.offer(), taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.25, 32))
	s.ack(s.update("a1"))
	tok := executorToken(t, c, "A")

	big := updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING)
	big.Update.Status.Data = make([]byte, maxUpdateBytes+1)
	if code, body := execCall(t, c, big, tok); code != http.StatusBadRequest {
		t.Fatalf("an update of %d bytes: %d %s, want 400", len(big.Update.Status.Data), code, body)
	}
	var last *execpb.Call
	taken := 0
	for range maxExecutorUpdates + 10 {
		last = updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING)
		code, body := execCall(t, c, last, tok)
		if code == http.StatusAccepted {
			taken++
			continue
		}
		if code != http.StatusTooManyRequests {
			t.Fatalf("update %d: %d %s", taken+1, code, body)
		}
		break
	}
	c.mu.Lock()
	pending := len(c.frameworks[s.fwID].tasks["a1"].pending)
	c.mu.Unlock()
	if taken >= maxExecutorUpdates || pending > maxExecutorUpdates {
		t.Fatalf("the agent took %d updates of one task (%d pending), want fewer than %d", taken, pending, maxExecutorUpdates)
	}
	if code, body := batchCall(t, c, tok, "application/x-protobuf", nil,
		updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING), updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING)); code != http.StatusTooManyRequests {
		t.Fatalf("a batch past the bound: %d %s, want 429", code, body)
	}
	sub := &execpb.Call{Type: execpb.Call_SUBSCRIBE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
		ExecutorID: mesos.ExecutorID{Value: "A"}, Subscribe: &execpb.Call_Subscribe{}}
	for range 100 {
		sub.Subscribe.UnacknowledgedUpdates = append(sub.Subscribe.UnacknowledgedUpdates, *updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING).Update)
	}
	execSubscribe(t, c, sub, tok)
	c.mu.Lock()
	after := len(c.frameworks[s.fwID].tasks["a1"].pending)
	c.mu.Unlock()
	if after != pending {
		t.Fatalf("a re-subscription's updates past the bound were taken: %d pending, was %d", after, pending)
	}
	// The last taken update, resent, is a duplicate: answered, not counted.
	prev := updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING)
	c.mu.Lock()
	prev.Update.Status.UUID = c.frameworks[s.fwID].tasks["a1"].pending[pending-1].status.UUID
	c.mu.Unlock()
	if code, body := execCall(t, c, prev, tok); code != http.StatusAccepted {
		t.Fatalf("a resent update: %d %s, want 202", code, body)
	}
}

// TestHostileMessageFlood: framework messages are not acknowledged, and an
// executor may send them as fast as it likes; each was queued on the
// scheduler's event stream, in this process's memory, however far behind
// the scheduler read. A message past maxUpdateBytes is refused, and once
// the stream holds maxQueuedForMessages the executor's messages are
// dropped, not queued.
func TestHostileMessageFlood(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, checkpointing(""))
	s.launch(s.offer(), taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.25, 32))
	s.ack(s.update("a1"))
	tok := executorToken(t, c, "A")
	msg := func(n int) *execpb.Call {
		return &execpb.Call{Type: execpb.Call_MESSAGE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
			ExecutorID: mesos.ExecutorID{Value: "A"}, Message: &execpb.Call_Message{Data: make([]byte, n)}}
	}
	if code, body := execCall(t, c, msg(maxUpdateBytes+1), tok); code != http.StatusBadRequest {
		t.Fatalf("a message of %d bytes: %d %s, want 400", maxUpdateBytes+1, code, body)
	}
	// A scheduler that reads nothing: its stream only queues.
	stalled := newEventStream(streamFormat{codec: codec{proto: true}}, "")
	c.mu.Lock()
	fw := c.frameworks[s.fwID]
	live := fw.sub
	fw.sub = stalled
	c.mu.Unlock()
	defer func() { c.mu.Lock(); fw.sub = live; c.mu.Unlock() }()
	batch := make([]*execpb.Call, 15) // in one request's 16 MiB
	for i := range batch {
		batch[i] = msg(maxUpdateBytes)
	}
	for i := range maxQueuedForMessages/maxUpdateBytes/len(batch) + 2 {
		if code, body := batchCall(t, c, tok, "application/x-protobuf", nil, batch...); code != http.StatusAccepted {
			t.Fatalf("batch %d of messages: %d %s", i, code, body)
		}
	}
	if q := stalled.queuedBytes(); q > maxQueuedForMessages+2*maxUpdateBytes {
		t.Fatalf("%d bytes queued for a scheduler that reads nothing, want at most about %d", q, maxQueuedForMessages)
	}
}

// TestHostileExecutorBodiesBeforeTheirToken: the executor API is open to
// every process of the host (a task reaches the agent on loopback), and
// each call's body, up to 16 MB, was read into the agent's memory (the
// scheduler's) before its token was looked at. A task with no token
// announcing 16 MB bodies on a few hundred connections, each left one byte
// short, held gigabytes of the scheduler. A call now needs a live
// executor's token before its body is read (401 at once without one), and
// one executor's token has at most maxExecReads bodies read at a time (429
// past them), so a compromised executor holds at most that many.
func TestHostileExecutorBodiesBeforeTheirToken(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.25, 32))
	s.ack(s.update("a1"))
	tok := executorToken(t, c, "A")
	addr := strings.TrimPrefix(c.URL(), "http://")

	// announce sends a call's headers with a 16 MB body and none of it.
	announce := func(token, contentType string) net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		auth := ""
		if token != "" {
			auth = "Authorization: Bearer " + token + "\r\n"
		}
		fmt.Fprintf(conn, "POST /api/v1/executor HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nMessage-Content-Type: application/json\r\n%sContent-Length: %d\r\n\r\n",
			addr, contentType, auth, 16<<20-1)
		return conn
	}
	// answer is the status the agent answers before the body is sent (0: none within 10 s).
	answer := func(conn net.Conn) int {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, ct := range []string{"application/json", "application/recordio"} {
		for _, token := range []string{"", "made-up-token"} {
			if code := answer(announce(token, ct)); code != http.StatusUnauthorized {
				t.Errorf("a %s call with token %q and its body not sent: %d, want 401 before the body", ct, token, code)
			}
		}
	}
	var held []net.Conn
	for range maxExecReads {
		held = append(held, announce(tok, "application/json"))
	}
	eventually(t, "the executor's calls being read", func() bool {
		c.execReads.mu.Lock()
		defer c.execReads.mu.Unlock()
		return c.execReads.n[sha256.Sum256([]byte(tok))] == maxExecReads
	})
	if code := answer(announce(tok, "application/json")); code != http.StatusTooManyRequests {
		t.Errorf("call %d of one executor with its body not sent: %d, want 429", maxExecReads+1, code)
	}
	for _, conn := range held {
		conn.Close()
	}
	eventually(t, "the executor's calls answered again", func() bool {
		code, _ := execCall(t, c, updateCall(s.fwID, "A", "a1", mesos.TASK_RUNNING), tok)
		return code == http.StatusAccepted
	})
}

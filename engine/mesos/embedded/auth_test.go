package embedded

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/jobs"
)

// request makes one request to the cluster with an optional HTTP Basic
// credential and returns the status and body.
func request(t *testing.T, method, url, body, user, pass string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if pass != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestFrameworkCredentialRequired: with a secret, a SUBSCRIBE that carries
// only the framework id (what every task's environment holds) is refused
// 401 and leaves the scheduler's stream in place; so is a wrong secret, and
// so are the operator API and the read endpoints.
func TestFrameworkCredentialRequired(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.Principal, cfg.Secret = "ej", "s3cret" })
	if _, code := trySubscribe(t, c.URL(), frameworkInfo()); code != http.StatusUnauthorized {
		t.Fatalf("SUBSCRIBE without a credential: %d, want 401", code)
	}
	s, code := trySubscribeAs(t, c.URL(), frameworkInfo(), "ej", "s3cret")
	if code != http.StatusOK {
		t.Fatalf("SUBSCRIBE with the credential: %d", code)
	}
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.ack(s.update("t1"))

	takeover := frameworkInfo()
	takeover.ID = &mesos.FrameworkID{Value: s.fwID}
	for _, cred := range [][2]string{{"", ""}, {"ej", "wrong"}, {"other", "s3cret"}} {
		if _, code := trySubscribeAs(t, c.URL(), takeover, cred[0], cred[1]); code != http.StatusUnauthorized {
			t.Fatalf("SUBSCRIBE as %s with %q: %d, want 401", s.fwID, cred, code)
		}
	}
	// A call with the stream id alone (no credential) is refused as well.
	body, _ := json.Marshal(&scheduler.Call{Type: scheduler.Call_TEARDOWN, FrameworkID: &mesos.FrameworkID{Value: s.fwID}})
	req, _ := http.NewRequest(http.MethodPost, c.URL()+"/api/v1/scheduler", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mesos-Stream-Id", s.streamID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("TEARDOWN without a credential: %d, want 401", resp.StatusCode)
	}

	// The scheduler's own stream is untouched: its calls are accepted on
	// it and answered on it, and its task still runs.
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_ERROR {
			t.Fatalf("the scheduler's stream got %v", ev.Error)
		}
	}
	if snap := c.Snapshot(); len(snap.Tasks) != 1 || snap.Tasks[0].State != "TASK_RUNNING" {
		t.Fatalf("tasks after the refused calls: %+v", snap.Tasks)
	}

	for _, ep := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/v1", `{"type":"GET_EXECUTORS"}`},
		{http.MethodGet, "/state", ""},
		{http.MethodGet, "/slaves", ""},
		{http.MethodGet, "/metrics/snapshot", ""},
		{http.MethodGet, "/files/read?path=" + c.Snapshot().Executors[0].Directory + "/stdout&offset=0", ""},
	} {
		if code, _ := request(t, ep.method, c.URL()+ep.path, ep.body, "", ""); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a credential: %d, want 401", ep.method, ep.path, code)
		}
		if code, body := request(t, ep.method, c.URL()+ep.path, ep.body, "ej", "s3cret"); code != http.StatusOK {
			t.Errorf("%s %s with the credential: %d %s", ep.method, ep.path, code, body)
		}
	}
	if code, _ := request(t, http.MethodGet, c.URL()+"/health", "", "", ""); code != http.StatusOK {
		t.Errorf("/health: %d", code)
	}
}

// executorToken reads the token the agent gave an executor (the test
// executor writes its environment to env.txt in its sandbox).
func executorToken(t *testing.T, c *Cluster, execID string) string {
	t.Helper()
	var tok string
	eventually(t, "the token of "+execID, func() bool {
		for _, e := range c.Snapshot().Executors {
			if e.ID != execID {
				continue
			}
			b, _ := os.ReadFile(filepath.Join(e.Directory, "env.txt"))
			for _, kv := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(kv, ExecutorTokenEnv+"="); ok {
					tok = v
				}
			}
		}
		return tok != ""
	})
	return tok
}

// execCall posts an executor call with a bearer token ("" for none).
func execCall(t *testing.T, c *Cluster, call *execpb.Call, token string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(call)
	req, _ := http.NewRequest(http.MethodPost, c.URL()+"/api/v1/executor", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func updateCall(fwID, execID, taskID string, state mesos.TaskState) *execpb.Call {
	return &execpb.Call{Type: execpb.Call_UPDATE, FrameworkID: mesos.FrameworkID{Value: fwID},
		ExecutorID: mesos.ExecutorID{Value: execID},
		Update: &execpb.Call_Update{Status: mesos.TaskStatus{TaskID: mesos.TaskID{Value: taskID},
			State: state.Enum(), Source: mesos.SOURCE_EXECUTOR.Enum(), UUID: uuidBytes()}}}
}

// TestExecutorTokenSpeaksForItsExecutorOnly: each executor gets a token of
// its own; the executor API refuses a call without one (401), a call as
// another executor with it and an update for another executor's task
// (403), and nothing reaches the scheduler from them.
func TestExecutorTokenSpeaksForItsExecutorOnly(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(),
		taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.5, 64),
		taskInfo(c, "b1", "hang", execInfo(t, "B", "1", 0.1, 32), 0.5, 64))
	for range 2 {
		s.ack(s.next(scheduler.Event_UPDATE).Update.Status)
	}
	tokA, tokB := executorToken(t, c, "A"), executorToken(t, c, "B")
	if tokA == tokB {
		t.Fatal("two executors share a token")
	}

	refused := []struct {
		name  string
		call  *execpb.Call
		token string
		want  int
	}{
		{"no token", updateCall(s.fwID, "B", "b1", mesos.TASK_FAILED), "", http.StatusUnauthorized},
		{"a made-up token", updateCall(s.fwID, "B", "b1", mesos.TASK_FAILED), "0123", http.StatusUnauthorized},
		{"A's token as B", updateCall(s.fwID, "B", "b1", mesos.TASK_FAILED), tokA, http.StatusForbidden},
		{"A's token for B's task", updateCall(s.fwID, "A", "b1", mesos.TASK_FAILED), tokA, http.StatusForbidden},
		{"A's token subscribing as B", &execpb.Call{Type: execpb.Call_SUBSCRIBE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
			ExecutorID: mesos.ExecutorID{Value: "B"}, Subscribe: &execpb.Call_Subscribe{}}, tokA, http.StatusForbidden},
		{"A's token messaging as B", &execpb.Call{Type: execpb.Call_MESSAGE, FrameworkID: mesos.FrameworkID{Value: s.fwID},
			ExecutorID: mesos.ExecutorID{Value: "B"}, Message: &execpb.Call_Message{Data: []byte("x")}}, tokA, http.StatusForbidden},
	}
	for _, r := range refused {
		if code, body := execCall(t, c, r.call, r.token); code != r.want {
			t.Errorf("%s: %d %s, want %d", r.name, code, body, r.want)
		}
	}
	// A's own token for A's own task is accepted (the control).
	if code, body := execCall(t, c, updateCall(s.fwID, "A", "a1", mesos.TASK_FINISHED), tokA); code != http.StatusAccepted {
		t.Fatalf("A's update of its own task: %d %s", code, body)
	}
	if st := s.update("a1"); st.GetState() != mesos.TASK_FINISHED {
		t.Fatalf("a1: %s", st.GetState())
	}
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_UPDATE && ev.Update.Status.TaskID.Value == "b1" || ev.Type == scheduler.Event_MESSAGE {
			t.Fatalf("a refused call reached the scheduler: %v", ev)
		}
	}
	for _, tk := range c.Snapshot().Tasks {
		if tk.ID == "b1" && tk.State != "TASK_RUNNING" {
			t.Fatalf("b1 is %s", tk.State)
		}
	}
}

// TestRecoveredExecutorWithoutToken: an executor an earlier version of the
// agent started (its checkpoint holds no token) is taken back after the
// upgrade, as before; executors started since need their token.
func TestRecoveredExecutorWithoutToken(t *testing.T) {
	start := restartable(t, nil)
	c1 := start()
	s1 := subscribe(t, c1, checkpointing(""))
	s1.launch(s1.offer(), taskInfo(c1, "t1", "hang", execInfo(t, "e1", "recover", 0.5, 64), 1, 128))
	s1.ack(s1.update("t1"))
	pid := executorPid(t, c1, "e1")
	work := c1.cfg.WorkDir
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(work, "meta", "slaves", "*", "frameworks", "*", "executors", "e1", "runs", "*", "forked.pid"))
	if len(files) != 1 {
		t.Fatalf("forked.pid files %v", files)
	}
	var f forked
	b, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(b, &f); err != nil || f.Token == "" {
		t.Fatalf("forked.pid %s: %v, want a token hash", b, err)
	}
	f.Token = "" // as an earlier version wrote it
	b, _ = json.Marshal(f)
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	c2 := start()
	eventually(t, "the executor of the earlier version to re-subscribe", func() bool {
		ex := c2.Snapshot().Executors
		return len(ex) == 1 && ex[0].State == "RUNNING" && ex[0].PID == pid
	})
}

// TestSecretFetchBoundToItsExecutor: the agent vouches for a secret fetch
// only when it carries the proof of the executor that runs the task; A's
// proof for B's task, a proof made with a made-up token, none at all, and
// a task the agent does not run are refused.
func TestSecretFetchBoundToItsExecutor(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(),
		taskInfo(c, "a1", "hang", execInfo(t, "A", "1", 0.1, 32), 0.5, 64),
		taskInfo(c, "b1", "hang", execInfo(t, "B", "1", 0.1, 32), 0.5, 64))
	for range 2 {
		s.ack(s.next(scheduler.Event_UPDATE).Update.Status)
	}
	tokA, tokB := executorToken(t, c, "A"), executorToken(t, c, "B")
	proof := func(tok, task string) string { return jobs.SecretFetchProof(sha256.Sum256([]byte(tok)), task) }
	if err := c.CheckSecretFetch("b1", proof(tokB, "b1")); err != nil {
		t.Fatalf("B's own proof for its task: %v", err)
	}
	for _, r := range []struct{ name, task, proof string }{
		{"A's proof for B's task", "b1", proof(tokA, "b1")},
		{"A's proof for A's task, replayed for B's", "b1", proof(tokA, "a1")},
		{"a made-up token's proof", "b1", proof("0123", "b1")},
		{"the raw token instead of a proof", "b1", tokB},
		{"no proof", "b1", ""},
		{"a task the agent does not run", "c1", proof(tokB, "c1")},
	} {
		if err := c.CheckSecretFetch(r.task, r.proof); !errors.Is(err, ErrNotTaskExecutor) {
			t.Errorf("%s: %v, want ErrNotTaskExecutor", r.name, err)
		}
	}
}

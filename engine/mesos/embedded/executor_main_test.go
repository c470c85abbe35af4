package embedded

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
)

// envMode selects the test executor behaviour when the test binary is
// re-executed by the agent: "1" is a well-behaved v1 executor, "recover"
// one that subscribes again whenever it loses the agent (for a minute at
// most), "silent" never subscribes.
const envMode = "LOCAL_TEST_EXECUTOR"

func TestMain(m *testing.M) {
	tenant.Init()
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(runTestExecutor(mode))
	}
	os.Exit(m.Run())
}

// testExec is a minimal Mesos v1 HTTP executor. Task data selects what a
// task does: "finish", "fail", "hang", "crash" (exit 3 once RUNNING is
// acknowledged), "msgs" (20 MESSAGE calls, then FINISHED), "reconnect"
// (RUNNING, then re-subscribe with it unacknowledged), "hog" (allocate
// 512 MB, then FINISHED), "hide" and "hidemap" (2 MB written to a file in
// the sandbox, removed and kept open or mapped, then the MESSAGE "held", then as
// "hang").
type testExec struct {
	url     string
	fwID    string
	execID  string
	token   string // $MESOS_EXECUTOR_AUTHENTICATION_TOKEN
	unacked map[string]execpb.Call_Update
	tasks   map[string]mesos.TaskInfo
	crashOn string
}

func runTestExecutor(mode string) int {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MESOS_") || strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "CUSTOM_") || strings.HasPrefix(kv, "ELASTICJOB_") {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	_ = os.WriteFile("env.txt", []byte(strings.Join(env, "\n")+"\n"), 0o644)
	fmt.Println("test executor started")
	if mode == "silent" {
		time.Sleep(time.Hour)
		return 0
	}
	x := &testExec{
		url:     "http://" + os.Getenv("MESOS_AGENT_ENDPOINT") + "/api/v1/executor",
		fwID:    os.Getenv("MESOS_FRAMEWORK_ID"),
		execID:  os.Getenv("MESOS_EXECUTOR_ID"),
		token:   os.Getenv(ExecutorTokenEnv),
		unacked: map[string]execpb.Call_Update{},
		tasks:   map[string]mesos.TaskInfo{},
	}
	lost := time.Now()
	for {
		again, err := x.session()
		if mode == "recover" {
			if err == nil {
				lost = time.Now()
			}
			if time.Since(lost) > time.Minute {
				return 4
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "executor:", err)
			return 1
		}
		if !again {
			return 0
		}
	}
}

func (x *testExec) post(call *execpb.Call) (*http.Response, error) {
	call.ExecutorID = mesos.ExecutorID{Value: x.execID}
	call.FrameworkID = mesos.FrameworkID{Value: x.fwID}
	b, err := json.Marshal(call)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest(http.MethodPost, x.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+x.token)
	if call.Type == execpb.Call_SUBSCRIBE { // the streaming form mesos-go's executor client uses
		req.Header.Set("Accept", "application/recordio")
		req.Header.Set("Message-Accept", "application/json")
	}
	return http.DefaultClient.Do(req)
}

func (x *testExec) send(call *execpb.Call) error {
	resp, err := x.post(call)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", call.Type, resp.Status, b)
	}
	return nil
}

// session subscribes and handles events; it reports whether to reconnect.
func (x *testExec) session() (bool, error) {
	sub := &execpb.Call_Subscribe{}
	for _, u := range x.unacked {
		sub.UnacknowledgedUpdates = append(sub.UnacknowledgedUpdates, u)
		sub.UnacknowledgedTasks = append(sub.UnacknowledgedTasks, x.tasks[u.Status.TaskID.Value])
	}
	resp, err := x.post(&execpb.Call{Type: execpb.Call_SUBSCRIBE, Subscribe: sub})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("subscribe: %s", resp.Status)
	}
	if ct, mt := resp.Header.Get("Content-Type"), resp.Header.Get("Message-Content-Type"); ct != "application/recordio" || mt != "application/json" {
		return false, fmt.Errorf("subscribe: Content-Type %q, Message-Content-Type %q", ct, mt)
	}
	r := recordio.NewReader(resp.Body)
	for {
		b, err := r.ReadFrame()
		if err != nil {
			return false, nil // stream closed by the agent
		}
		var ev execpb.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return false, err
		}
		again, err := x.handle(&ev)
		if err != nil || again {
			return again, err
		}
	}
}

func (x *testExec) handle(ev *execpb.Event) (bool, error) {
	switch ev.Type {
	case execpb.Event_LAUNCH:
		return x.launch(ev.Launch.Task)
	case execpb.Event_KILL:
		return false, x.update(ev.Kill.TaskID, mesos.TASK_KILLED)
	case execpb.Event_ACKNOWLEDGED:
		key := string(ev.Acknowledged.UUID)
		u := x.unacked[key]
		delete(x.unacked, key)
		appendLine("acked.log", ev.Acknowledged.TaskID.Value+" "+u.Status.GetState().String())
		if key == x.crashOn {
			os.Exit(3)
		}
	case execpb.Event_MESSAGE:
		return false, x.send(&execpb.Call{Type: execpb.Call_MESSAGE,
			Message: &execpb.Call_Message{Data: append([]byte("echo:"), ev.Message.Data...)}})
	case execpb.Event_SHUTDOWN:
		appendLine("acked.log", "shutdown")
		os.Exit(0)
	}
	return false, nil
}

func (x *testExec) launch(t mesos.TaskInfo) (bool, error) {
	x.tasks[t.TaskID.Value] = t
	if err := x.update(t.TaskID, mesos.TASK_RUNNING); err != nil {
		return false, err
	}
	switch string(t.Data) {
	case "finish":
		return false, x.update(t.TaskID, mesos.TASK_FINISHED)
	case "fail":
		return false, x.update(t.TaskID, mesos.TASK_FAILED)
	case "crash":
		for k := range x.unacked {
			x.crashOn = k
		}
	case "reconnect":
		return true, nil
	case "hog": // allocate past any small memory limit
		b := make([]byte, 512<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return false, x.update(t.TaskID, mesos.TASK_FINISHED)
	case "hide", "hidemap": // 2 MB in a removed file it keeps open, or mapped
		if err := holdRemoved(string(t.Data) == "hidemap"); err != nil {
			return false, err
		}
		return false, x.send(&execpb.Call{Type: execpb.Call_MESSAGE, Message: &execpb.Call_Message{Data: []byte("held")}})
	case "msgs":
		for i := 0; i < 20; i++ {
			m := &execpb.Call_Message{Data: []byte(fmt.Sprintf("m%02d", i))}
			if err := x.send(&execpb.Call{Type: execpb.Call_MESSAGE, Message: m}); err != nil {
				return false, err
			}
		}
		return false, x.update(t.TaskID, mesos.TASK_FINISHED)
	}
	return false, nil
}

func (x *testExec) update(id mesos.TaskID, state mesos.TaskState) error {
	uuid := make([]byte, 16)
	_, _ = rand.Read(uuid)
	ts := float64(time.Now().UnixNano()) / 1e9
	u := execpb.Call_Update{Status: mesos.TaskStatus{
		TaskID: id, State: state.Enum(), Source: mesos.SOURCE_EXECUTOR.Enum(), UUID: uuid,
		ExecutorID: &mesos.ExecutorID{Value: x.execID}, Timestamp: &ts,
	}}
	x.unacked[string(uuid)] = u
	return x.send(&execpb.Call{Type: execpb.Call_UPDATE, Update: &u})
}

func appendLine(name, line string) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

package mesos

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/engine"
)

// offerWithExecutor is an offer from agent a1 on which executor app@-@a1 of fw-1 is running.
func offerWithExecutor(id string) string {
	return `{"type":"OFFERS","offers":{"offers":[{"id":{"value":"` + id + `"},"framework_id":{"value":"fw-1"},
 "agent_id":{"value":"a1"},"hostname":"host1","executor_ids":[{"value":"app@-@a1"}],
 "resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":4},"role":"*"},
  {"name":"mem","type":"SCALAR","scalar":{"value":4096},"role":"*"}]}]}}`
}

// foreignExecutors is the master's GET_EXECUTORS answer: app@-@a1 was started by another
// scheduler instance, whose executor came from its own URL; another framework's executor is
// skipped.
const foreignExecutors = `{"type":"GET_EXECUTORS","get_executors":{"executors":[
 {"agent_id":{"value":"a1"},"executor_info":{"type":"CUSTOM","executor_id":{"value":"app@-@a1"},
  "framework_id":{"value":"fw-1"},"name":"app",
  "command":{"value":"./elasticjob-executor","shell":false,"uris":[{"value":"http://sched-a:8899/artifacts/executor/abc/elasticjob-executor","executable":true,"cache":true,"extract":false}]},
  "resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":0.25},"role":"*"},{"name":"mem","type":"SCALAR","scalar":{"value":64},"role":"*"}]}},
 {"agent_id":{"value":"a1"},"executor_info":{"type":"DEFAULT","executor_id":{"value":"x"},"framework_id":{"value":"other"},
  "container":{"type":"SOMETHING_NEW"}}}
]}}`

// TestTaskJoinsForeignExecutorWithItsInfo: a task for an executor that runs on the agent but
// was started by another scheduler instance carries that executor's ExecutorInfo (read from the
// master once), so Mesos does not refuse it as incompatible.
func TestTaskJoinsForeignExecutorWithItsInfo(t *testing.T) {
	var logs strings.Builder
	m, c, h, sub := subscribe(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, "fw-1")
	m.setOperator(func() string { return foreignExecutors })
	sub.send(offerWithExecutor("o1"))
	recv(t, h.offers, "Offers")
	if err := c.Accept(context.Background(), []string{"o1"}, []engine.TaskLaunch{testLaunch("t1", 1)}, 0); err != nil {
		t.Fatal(err)
	}
	rec := m.nextCall()
	ei := launched(rec)
	if uri := ei.GetCommand().URIs[0].Value; !strings.HasPrefix(uri, "http://sched-a:8899/") || ei.GetName() != "app" {
		t.Fatalf("task did not adopt the running executor's info: %s", rec.raw)
	}
	sub.send(offerWithExecutor("o2"))
	recv(t, h.offers, "Offers")
	if err := c.Accept(context.Background(), []string{"o2"}, []engine.TaskLaunch{testLaunch("t2", 1)}, 0); err != nil {
		t.Fatal(err)
	}
	if uri := launched(m.nextCall()).GetCommand().URIs[0].Value; !strings.HasPrefix(uri, "http://sched-a:8899/") {
		t.Fatalf("second task: executor URI %s", uri)
	}
	if n := m.operatorCallCount(); n != 1 {
		t.Fatalf("GET_EXECUTORS called %d times, want once", n)
	}
	if n := strings.Count(logs.String(), "joins a running executor"); n != 1 {
		t.Fatalf("the join is logged %d times, want once per executor (after a takeover every task of the old leader's executors joins one):\n%s", n, logs.String())
	}
}

// TestOwnExecutorKeepsItsInfo: an executor this client launched is known; the master is not
// asked, and when an offer no longer lists it, the next launch starts it with the client's info.
func TestOwnExecutorKeepsItsInfo(t *testing.T) {
	m, c, h, sub := subscribe(t, Config{}, "fw-1")
	m.setOperator(func() string { return foreignExecutors })
	sub.send(strings.Replace(offerWithExecutor("o1"), `"executor_ids":[{"value":"app@-@a1"}],`, "", 1))
	recv(t, h.offers, "Offers")
	if err := c.Accept(context.Background(), []string{"o1"}, []engine.TaskLaunch{testLaunch("t1", 1)}, 0); err != nil {
		t.Fatal(err)
	}
	own := launched(m.nextCall()).GetCommand().URIs[0].Value
	sub.send(offerWithExecutor("o2"))
	recv(t, h.offers, "Offers")
	if err := c.Accept(context.Background(), []string{"o2"}, []engine.TaskLaunch{testLaunch("t2", 1)}, 0); err != nil {
		t.Fatal(err)
	}
	if uri := launched(m.nextCall()).GetCommand().URIs[0].Value; uri != own {
		t.Fatalf("own executor: URI %s, want %s", uri, own)
	}
	if n := m.operatorCallCount(); n != 0 {
		t.Fatalf("GET_EXECUTORS called %d times for an executor the client launched", n)
	}
}

// TestNoOperatorAPI: a master without the operator API (the embedded one) leaves launches as
// they are and is asked once per unknown executor, not on every launch.
func TestNoOperatorAPI(t *testing.T) {
	m, c, h, sub := subscribe(t, Config{}, "fw-1")
	for i, id := range []string{"o1", "o2"} {
		sub.send(offerWithExecutor(id))
		recv(t, h.offers, "Offers")
		if err := c.Accept(context.Background(), []string{id}, []engine.TaskLaunch{testLaunch("t"+id, 1)}, 0); err != nil {
			t.Fatal(err)
		}
		if uri := launched(m.nextCall()).GetCommand().URIs[0].Value; uri != "http://x/app.tar.gz" {
			t.Fatalf("launch %d: URI %s", i, uri)
		}
	}
	if n := m.operatorCallCount(); n != 1 {
		t.Fatalf("GET_EXECUTORS called %d times, want once", n)
	}
}

// launched returns the executor of the first task an ACCEPT launched.
func launched(rec recorded) *mesos.ExecutorInfo {
	return rec.call.Accept.Operations[0].GetLaunch().TaskInfos[0].Executor
}

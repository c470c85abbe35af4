package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/engine"
)

// fakeLead is a standby of a cluster of two: the leader "a", itself "b".
type fakeLead struct{}

var (
	leadA = election.Member{ID: "a", URL: "http://a:8899", Hostname: "a", Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	selfB = election.Member{ID: "b", URL: "http://b:8899", Hostname: "b", Started: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
)

func (fakeLead) Run(context.Context) error       { return nil }
func (fakeLead) Terms() <-chan *election.Term    { return nil }
func (fakeLead) Current() *election.Term         { return nil }
func (fakeLead) Leader() (election.Member, bool) { return leadA, true }
func (fakeLead) Members(context.Context) ([]election.Member, error) {
	return []election.Member{selfB, leadA}, nil
}
func (fakeLead) Self() election.Member { return selfB }

// fakeEngine answers the API's reads as set.
type fakeEngine struct {
	view   engine.View
	agents []engine.Agent
	err    error
}

func (f *fakeEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Checkpointing: true, Logs: true, ClusterView: true}
}
func (f *fakeEngine) TaskLog(_ context.Context, taskID, _ string, offset, _ int64) (engine.LogChunk, error) {
	return engine.LogChunk{Offset: offset, Size: 10, Data: "x"}, f.err
}
func (f *fakeEngine) Sandboxes(context.Context, string) ([]engine.Sandbox, error) {
	return []engine.Sandbox{{Hostname: "h", AgentID: "S0", ExecutorID: "a@-@S0", Path: "/sb"}}, f.err
}
func (f *fakeEngine) ClusterView(context.Context) engine.View        { return f.view }
func (f *fakeEngine) Agents(context.Context) ([]engine.Agent, error) { return f.agents, f.err }

func pageJSON(t *testing.T, o *ops) map[string]any {
	t.Helper()
	v, err := o.Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// The cluster page keeps the shape the console reads: the instances, the engine's part
// under its name, the agents (or why not); and says which engine runs and what it can do.
func TestClusterPage(t *testing.T) {
	eng := &fakeEngine{view: engine.View{Name: "mesos", Detail: map[string]any{"url": "http://m:5050", "embedded": false},
		Agents: []map[string]any{{"id": "S0"}}}}
	m := pageJSON(t, &ops{lead: fakeLead{}, eng: eng})
	if m["mode"] != "cluster" || m["role"] != "standby" || m["leader"].(map[string]any)["id"] != "a" ||
		m["self"].(map[string]any)["self"] != true || len(m["standbys"].([]any)) != 1 {
		t.Fatalf("instances: %v", m)
	}
	if m["mesos"].(map[string]any)["url"] != "http://m:5050" || len(m["agents"].([]any)) != 1 || m["agentsError"] != nil || m["kubernetes"] != nil {
		t.Fatalf("engine part: %v", m)
	}
	e := m["engine"].(map[string]any)
	if caps := e["capabilities"].(map[string]any); e["name"] != "mesos" || caps["checkpointing"] != true || caps["executorSharing"] != false {
		t.Fatalf("engine: %v", e)
	}

	eng.view = engine.View{Name: "kubernetes", Detail: map[string]any{"namespace": "jobs", "nodes": []any{}}}
	m = pageJSON(t, &ops{lead: fakeLead{}, eng: eng})
	if m["kubernetes"].(map[string]any)["namespace"] != "jobs" || m["mesos"] != nil || m["agents"] == nil || len(m["agents"].([]any)) != 0 {
		t.Fatalf("Kubernetes page: %v (agents an empty list)", m)
	}
	eng.view = engine.View{Name: "mesos", Detail: map[string]any{}, Agents: []any{}, AgentsError: "master down"}
	if m = pageJSON(t, &ops{lead: fakeLead{}, eng: eng}); m["agentsError"] != "master down" {
		t.Fatalf("agents error: %v", m)
	}
}

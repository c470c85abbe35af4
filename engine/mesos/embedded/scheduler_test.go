package embedded

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

func TestSubscribeKeepsFrameworkIDOnResubscribe(t *testing.T) {
	c := newCluster(t, nil)
	info := frameworkInfo()
	timeout := 3600.0
	info.FailoverTimeout = &timeout
	s1 := subscribe(t, c, info)
	if s1.fwID == "" || s1.streamID == "" {
		t.Fatalf("framework id %q, stream id %q", s1.fwID, s1.streamID)
	}
	if ct := s1.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	info.ID = &mesos.FrameworkID{Value: s1.fwID}
	s2 := subscribe(t, c, info)
	if s2.fwID != s1.fwID {
		t.Fatalf("re-subscribe got id %q, want %q", s2.fwID, s1.fwID)
	}
	for range s1.events { // the old stream is closed by the new subscription
	}
	if code, _ := s1.call(&scheduler.Call{Type: scheduler.Call_REVIVE}); code != http.StatusBadRequest {
		t.Errorf("call on the old stream id: status %d, want 400", code)
	}
	s2.mustCall(&scheduler.Call{Type: scheduler.Call_REVIVE})
}

func TestSubscribeAcceptsIDFromAnotherMaster(t *testing.T) {
	c := newCluster(t, nil)
	info := frameworkInfo()
	info.ID = &mesos.FrameworkID{Value: "issued-by-a-previous-run-0001"}
	s := subscribe(t, c, info)
	if s.fwID != info.ID.Value {
		t.Fatalf("id %q", s.fwID)
	}
}

func TestSubscribedAndHeartbeat(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.HeartbeatInterval = 20 * time.Millisecond })
	body := []byte(`{"type":"SUBSCRIBE","subscribe":{"framework_info":{"user":"u","name":"n"}}}`)
	resp, err := http.Post(c.URL()+"/api/v1/scheduler", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := subscribe(t, c, frameworkInfo())
	s.next(scheduler.Event_HEARTBEAT)
}

func TestBadCalls(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	cases := []struct {
		name, ct, body string
		want           int
	}{
		{"bad json", "application/json", `{`, http.StatusBadRequest},
		{"bad content type", "text/plain", `{}`, http.StatusUnsupportedMediaType},
		{"no framework id", "application/json", `{"type":"REVIVE"}`, http.StatusBadRequest},
		{"unknown framework", "application/json", `{"type":"REVIVE","framework_id":{"value":"nope"}}`, http.StatusForbidden},
	}
	for _, tc := range cases {
		resp, err := http.Post(c.URL()+"/api/v1/scheduler", tc.ct, bytes.NewReader([]byte(tc.body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	if code, _ := s.call(&scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, Acknowledge: &scheduler.Call_Acknowledge{
		TaskID: mesos.TaskID{Value: "x"}, UUID: []byte("short")}}); code != http.StatusBadRequest {
		t.Errorf("bad uuid: status %d", code)
	}
}

func TestOfferShape(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	o := s.offer()
	if o.AgentID.Value != c.AgentID() || o.Hostname != "test-host" || o.FrameworkID.Value != s.fwID {
		t.Fatalf("offer header: %+v", o)
	}
	want := map[string]bool{"cpus": true, "mem": true, "disk": true, "ports": true}
	for _, r := range o.Resources {
		if r.GetRole() != "*" || r.AllocationInfo != nil {
			t.Errorf("%s: role %q allocation %v", r.Name, r.GetRole(), r.AllocationInfo)
		}
		switch r.Name {
		case "cpus", "mem", "disk":
			if r.GetType() != mesos.SCALAR {
				t.Errorf("%s type %s", r.Name, r.GetType())
			}
		case "ports":
			rr := r.GetRanges().GetRange()
			if r.GetType() != mesos.RANGES || len(rr) != 1 || rr[0].Begin != 31000 || rr[0].End != 31009 {
				t.Errorf("ports %+v", r)
			}
		}
		delete(want, r.Name)
	}
	if len(want) != 0 || scalarOf(o.Resources, "cpus") != 4 || scalarOf(o.Resources, "mem") != 4096 {
		t.Fatalf("offer resources %v", o.Resources)
	}
}

func TestOfferAllocationInfoForMultiRole(t *testing.T) {
	c := newCluster(t, nil)
	info := frameworkInfo(mesos.FrameworkInfo_Capability_MULTI_ROLE)
	info.Roles = []string{"jobs"}
	s := subscribe(t, c, info)
	o := s.offer()
	if o.AllocationInfo.GetRole() != "jobs" {
		t.Fatalf("offer allocation %v", o.AllocationInfo)
	}
	for _, r := range o.Resources {
		if r.AllocationInfo.GetRole() != "jobs" || r.GetRole() != "*" {
			t.Errorf("%s: %v", r.Name, r)
		}
	}
	ex := execInfo(t, "e1", "1", 0.1, 32)
	ex.Resources = mesos.Resources(ex.Resources).Allocate("jobs")
	ti := taskInfo(c, "t1", "finish", ex, 0.5, 64)
	ti.Resources = mesos.Resources(ti.Resources).Allocate("jobs")
	s.launch(o, ti)
	if st := s.update("t1"); st.GetState() != mesos.TASK_RUNNING {
		t.Fatalf("state %s: %s", st.GetState(), st.GetMessage())
	}
}

func TestDeclineFilterThenReofferAfterExpiry(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	o1 := s.offer()
	s.decline(o1, 0.05)
	o2 := s.offer()
	if o2.ID == o1.ID {
		t.Fatal("same offer id re-offered")
	}
	// A long filter holds until REVIVE clears it.
	s.decline(o2, 3600)
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_OFFERS {
			t.Fatal("offer despite an active filter")
		}
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_REVIVE})
	s.offer()
}

func TestSuppressAndRevive(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	o := s.offer()
	s.mustCall(&scheduler.Call{Type: scheduler.Call_SUPPRESS})
	s.decline(o, 0)
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_OFFERS {
			t.Fatal("offer while suppressed")
		}
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_REVIVE})
	s.offer()
}

func TestNoSecondOfferWhileOneIsOutstanding(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.offer()
	s.mustCall(&scheduler.Call{Type: scheduler.Call_REVIVE})
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_OFFERS {
			t.Fatal("outstanding resources offered twice")
		}
	}
	// A second framework gets nothing while the first holds the pool.
	s2 := subscribe(t, c, frameworkInfo())
	for _, ev := range s2.barrier() {
		if ev.Type == scheduler.Event_OFFERS {
			t.Fatal("outstanding resources offered to another framework")
		}
	}
}

func TestInvalidAccept(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo(mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	o := s.offer()
	ex := execInfo(t, "e1", "1", 0.1, 32)
	s.launch(o,
		taskInfo(c, "too-big", "finish", ex, 64, 64),
		taskInfo(c, "bad/id", "finish", ex, 1, 64),
	)
	for _, id := range []string{"too-big", "bad/id"} {
		st := s.update(id)
		if st.GetState() != mesos.TASK_ERROR || st.GetReason() != mesos.REASON_TASK_INVALID || st.GetMessage() == "" {
			t.Errorf("%s: %s %s %q", id, st.GetState(), st.GetReason(), st.GetMessage())
		}
		if len(st.UUID) != 0 {
			t.Errorf("%s: master-generated update has a uuid", id)
		}
	}
	s.launch(o, taskInfo(c, "stale", "finish", ex, 1, 64)) // offer already used
	if st := s.update("stale"); st.GetState() != mesos.TASK_DROPPED || st.GetReason() != mesos.REASON_INVALID_OFFERS {
		t.Errorf("stale offer: %s %s", st.GetState(), st.GetReason())
	}
	if n := len(c.Snapshot().Executors); n != 0 {
		t.Errorf("%d executors started for invalid tasks", n)
	}
}

func TestReconcile(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	o := s.offer()
	s.launch(o, taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	running := s.update("t1")
	s.ack(running)

	s.mustCall(&scheduler.Call{Type: scheduler.Call_RECONCILE, Reconcile: &scheduler.Call_Reconcile{}})
	st := s.update("t1")
	if st.GetState() != mesos.TASK_RUNNING || st.GetReason() != mesos.REASON_RECONCILIATION || len(st.UUID) != 0 {
		t.Fatalf("implicit: %s %s uuid=%x", st.GetState(), st.GetReason(), st.UUID)
	}
	agent := mesos.AgentID{Value: c.AgentID()}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_RECONCILE, Reconcile: &scheduler.Call_Reconcile{
		Tasks: []scheduler.Call_Reconcile_Task{{TaskID: mesos.TaskID{Value: "t1"}}, {TaskID: mesos.TaskID{Value: "nope"}, AgentID: &agent}}}})
	if st := s.update("t1"); st.GetState() != mesos.TASK_RUNNING || st.GetReason() != mesos.REASON_RECONCILIATION {
		t.Fatalf("explicit t1: %s %s", st.GetState(), st.GetReason())
	}
	if st := s.update("nope"); st.GetState() != mesos.TASK_LOST || st.GetReason() != mesos.REASON_RECONCILIATION {
		t.Fatalf("explicit unknown: %s %s", st.GetState(), st.GetReason())
	}
}

func TestReconcileUnknownPartitionAware(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo(mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	agent := mesos.AgentID{Value: c.AgentID()}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_RECONCILE, Reconcile: &scheduler.Call_Reconcile{
		Tasks: []scheduler.Call_Reconcile_Task{{TaskID: mesos.TaskID{Value: "a"}}, {TaskID: mesos.TaskID{Value: "b"}, AgentID: &agent}}}})
	if st := s.update("a"); st.GetState() != mesos.TASK_UNKNOWN {
		t.Errorf("no agent: %s", st.GetState())
	}
	if st := s.update("b"); st.GetState() != mesos.TASK_GONE {
		t.Errorf("on this agent: %s", st.GetState())
	}
}

func TestTeardownAndFailoverTimeout(t *testing.T) {
	c := newCluster(t, nil)
	info := frameworkInfo() // failover_timeout 0: removed as soon as it disconnects
	s := subscribe(t, c, info)
	s.offer()
	s.close()
	info.ID = &mesos.FrameworkID{Value: s.fwID}
	eventually(t, "framework removal", func() bool { return len(c.Snapshot().Frameworks) == 0 })
	if _, code := trySubscribe(t, c.URL(), info); code != http.StatusForbidden {
		t.Fatalf("re-subscribe of a removed framework: %d", code)
	}
	s2 := subscribe(t, c, frameworkInfo())
	s2.mustCall(&scheduler.Call{Type: scheduler.Call_TEARDOWN})
	for range s2.events {
	}
	if n := len(c.Snapshot().Frameworks); n != 0 {
		t.Fatalf("%d frameworks after TEARDOWN", n)
	}
}

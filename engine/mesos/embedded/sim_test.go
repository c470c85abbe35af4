package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/clock"
)

// simCluster is a simulated cluster of n agents (2 cpus, 1024 MB each)
// whose task durations follow the returned fake clock.
func simCluster(t *testing.T, n int, mutate func(*SimConfig)) (*Cluster, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	sim := SimConfig{Agents: n, AgentCPUs: 2, AgentMemMB: 1024, TaskMin: 30 * time.Second, ExecutorIdle: time.Minute, Seed: 7}
	if mutate != nil {
		mutate(&sim)
	}
	c := newCluster(t, func(cfg *Config) { cfg.Sim = &sim; cfg.Clock = clk })
	return c, clk
}

// offerOn returns a held offer of the agent, waiting for one if needed.
func (s *sched) offerOn(agentID string) mesos.Offer {
	s.t.Helper()
	for {
		for i, o := range s.offers {
			if o.AgentID.Value == agentID {
				s.offers = append(s.offers[:i], s.offers[i+1:]...)
				return o
			}
		}
		s.keep(s.next(scheduler.Event_OFFERS))
	}
}

// simTaskInfo is a task for agentID with a simulated executor (its command is
// never run).
func simTaskInfo(agentID, id, execID string, cpus, mem float64) mesos.TaskInfo {
	cmd := "/nonexistent/never-run"
	return mesos.TaskInfo{Name: id, TaskID: mesos.TaskID{Value: id}, AgentID: mesos.AgentID{Value: agentID},
		Executor: &mesos.ExecutorInfo{ExecutorID: mesos.ExecutorID{Value: execID}, Command: &mesos.CommandInfo{Value: &cmd},
			Resources: []mesos.Resource{scalar("cpus", 0.1), scalar("mem", 32)}},
		Resources: []mesos.Resource{scalar("cpus", cpus), scalar("mem", mem)}}
}

// ackedUpdate waits for the task's next update, checks its state and
// acknowledges it.
func (s *sched) ackedUpdate(taskID string, want mesos.TaskState) mesos.TaskStatus {
	s.t.Helper()
	st := s.update(taskID)
	if st.GetState() != want {
		s.t.Fatalf("%s: update %s (%s), want %s", taskID, st.GetState(), st.GetMessage(), want)
	}
	s.ack(st)
	return st
}

// Every simulated agent is offered, each with its own id, host name and
// resources, in one OFFERS event; /state lists them all.
func TestSimAgentsAreOffered(t *testing.T) {
	c, _ := simCluster(t, 3, nil)
	s := subscribe(t, c, frameworkInfo())
	offers := s.next(scheduler.Event_OFFERS).Offers.Offers
	if len(offers) != 3 {
		t.Fatalf("%d offers in the first OFFERS event, want 3", len(offers))
	}
	seen := map[string]bool{}
	for i, o := range offers {
		if want := fmt.Sprintf("sim-%04d", i); o.Hostname != want || seen[o.AgentID.Value] {
			t.Errorf("offer %d on %s (agent %s), want host %s and a distinct agent", i, o.Hostname, o.AgentID.Value, want)
		}
		seen[o.AgentID.Value] = true
		if scalarOf(o.Resources, "cpus") != 2 || scalarOf(o.Resources, "mem") != 1024 || scalarOf(o.Resources, "disk") != DefaultDiskMB {
			t.Errorf("offer %d resources %v", i, o.Resources)
		}
	}
	var st struct {
		Slaves []struct{ ID, Hostname string } `json:"slaves"`
	}
	getJSON(t, c.URL()+"/state", &st)
	if len(st.Slaves) != 3 || st.Slaves[2].Hostname != "sim-0002" || !seen[st.Slaves[1].ID] {
		t.Fatalf("/state slaves %+v", st.Slaves)
	}
}

// A simulated task goes through the agent's reliable update stream:
// RUNNING (it starts at once, so no STARTING), then FINISHED when its
// duration has passed; the executor stays charged until it has been
// idle for ExecutorIdle, then exits (FAILURE event) and its resources are
// offered again.
func TestSimTaskLifecycle(t *testing.T) {
	c, clk := simCluster(t, 2, nil)
	s := subscribe(t, c, frameworkInfo())
	agent := c.agents[1].id
	s.launch(s.offerOn(agent), simTaskInfo(agent, "t1", "e1", 0.5, 128))

	running := s.update("t1")
	if running.GetState() != mesos.TASK_RUNNING || running.GetSource() != mesos.SOURCE_EXECUTOR ||
		running.GetAgentID().GetValue() != agent || running.GetExecutorID().GetValue() != "e1" || len(running.UUID) != 16 {
		t.Fatalf("first update %+v", running)
	}
	var m map[string]float64 // the agent holds RUNNING (forwarded) until acknowledged
	getJSON(t, c.URL()+"/metrics/snapshot", &m)
	if m["master/tasks_running"] != 1 || m["embedded/unacknowledged_updates"] != 1 || m["master/slaves_active"] != 2 ||
		m["master/frameworks_active"] != 1 {
		t.Fatalf("/metrics/snapshot %v", m)
	}
	s.ack(running)
	var r simReport
	if err := json.Unmarshal(running.Data, &r); err != nil || r.Hostname != "sim-0001" || r.StartTime == nil {
		t.Fatalf("RUNNING data %s: %v", running.Data, err)
	}
	// The unused rest of the offer comes back at once (refuse 0): the
	// executor and the task are charged.
	if rest := s.offerOn(agent); scalarOf(rest.Resources, "cpus") != 1.4 || scalarOf(rest.Resources, "mem") != 1024-160 {
		t.Fatalf("offer during the task: %v", rest.Resources)
	} else {
		s.decline(rest, 3600)
	}

	clk.Advance(30 * time.Second)
	finished := s.ackedUpdate("t1", mesos.TASK_FINISHED)
	if err := json.Unmarshal(finished.Data, &r); err != nil || r.ExitCode == nil || *r.ExitCode != 0 || r.CompleteTime == nil {
		t.Fatalf("FINISHED data %s: %v", finished.Data, err)
	}
	// The idle executor stays charged: the freed task resources are offered
	// (they are not covered by the filter of the smaller pool declined
	// above), the executor's are not.
	idle := s.offerOn(agent)
	if scalarOf(idle.Resources, "cpus") != 1.9 || scalarOf(idle.Resources, "mem") != 1024-32 {
		t.Fatalf("offer after the task: %v, want the executor still charged", idle.Resources)
	}
	s.decline(idle, 3600)
	clk.Advance(time.Minute)
	f := s.next(scheduler.Event_FAILURE).Failure
	if f.GetExecutorID().GetValue() != "e1" || f.GetAgentID().GetValue() != agent || f.GetStatus() != 0 {
		t.Fatalf("FAILURE %+v", f)
	}
	if all := s.offerOn(agent); scalarOf(all.Resources, "cpus") != 2 || scalarOf(all.Resources, "mem") != 1024 {
		t.Fatalf("offer after the executor exited: %v", all.Resources)
	}
	checkCharges(t, c)
}

// FailRatio 1 fails every task (exit code 1 in its data); KILL and
// SHUTDOWN end running tasks with TASK_KILLED.
func TestSimFailuresKillAndShutdown(t *testing.T) {
	c, _ := simCluster(t, 1, func(s *SimConfig) { s.FailRatio = 1; s.TaskMin = 0 })
	s := subscribe(t, c, frameworkInfo())
	agent := c.AgentID()
	s.launch(s.offerOn(agent), simTaskInfo(agent, "bad", "e1", 0.1, 32))
	running := s.update("bad") // the task fails at once: its FAILED waits for RUNNING's acknowledgement
	if running.GetState() != mesos.TASK_RUNNING {
		t.Fatalf("first update %+v", running)
	}
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_UPDATE && ev.Update.Status.TaskID.Value == "bad" {
			t.Fatalf("FAILED forwarded before RUNNING was acknowledged")
		}
	}
	s.ack(running)
	failed := s.ackedUpdate("bad", mesos.TASK_FAILED)
	if !strings.Contains(failed.GetMessage(), "simulated") || !strings.Contains(string(failed.Data), `"exitCode":1`) {
		t.Fatalf("TASK_FAILED %q data %s", failed.GetMessage(), failed.Data)
	}

	c2, _ := simCluster(t, 1, func(s *SimConfig) { s.TaskMin = time.Hour })
	s2 := subscribe(t, c2, frameworkInfo())
	agent = c2.AgentID()
	s2.launch(s2.offerOn(agent), simTaskInfo(agent, "k1", "e1", 0.1, 32), simTaskInfo(agent, "k2", "e1", 0.1, 32))
	for _, id := range []string{"k1", "k2"} { // the tasks' update streams interleave
		s2.ackedUpdate(id, mesos.TASK_RUNNING)
	}
	s2.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "k1"}}})
	s2.ackedUpdate("k1", mesos.TASK_KILLED)
	s2.mustCall(&scheduler.Call{Type: scheduler.Call_SHUTDOWN, Shutdown: &scheduler.Call_Shutdown{
		ExecutorID: mesos.ExecutorID{Value: "e1"}, AgentID: mesos.AgentID{Value: agent}}})
	s2.ackedUpdate("k2", mesos.TASK_KILLED)
	if f := s2.next(scheduler.Event_FAILURE).Failure; f.GetExecutorID().GetValue() != "e1" {
		t.Fatalf("FAILURE %+v", f)
	}
	checkCharges(t, c)
	checkCharges(t, c2)
}

// Offers of two agents cannot be accepted together (as in Mesos): the
// tasks are lost and both offers' resources come back.
func TestAcceptAcrossAgentsIsInvalid(t *testing.T) {
	c, _ := simCluster(t, 2, nil)
	s := subscribe(t, c, frameworkInfo())
	a0, a1 := s.offerOn(c.agents[0].id), s.offerOn(c.agents[1].id)
	refuse := 0.0
	s.mustCall(&scheduler.Call{Type: scheduler.Call_ACCEPT, Accept: &scheduler.Call_Accept{
		OfferIDs: []mesos.OfferID{a0.ID, a1.ID},
		Operations: []mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH, Launch: &mesos.Offer_Operation_Launch{
			TaskInfos: []mesos.TaskInfo{simTaskInfo(c.agents[0].id, "x", "e1", 0.1, 32)}}}},
		Filters: &mesos.Filters{RefuseSeconds: &refuse}}})
	lost := s.update("x")
	if lost.GetState() != mesos.TASK_LOST || lost.GetReason() != mesos.REASON_INVALID_OFFERS ||
		!strings.Contains(lost.GetMessage(), "one single agent") {
		t.Fatalf("update %s %s %q", lost.GetState(), lost.GetReason(), lost.GetMessage())
	}
	for _, a := range c.agents[:2] {
		if o := s.offerOn(a.id); scalarOf(o.Resources, "cpus") != 2 {
			t.Fatalf("offer of %s after the invalid accept: %v", a.hostname, o.Resources)
		}
	}
}

// A decline filter hides only the declined agent: the other agent's
// declined offer (no filter) comes back, the filtered one only on REVIVE.
func TestDeclineFilterIsPerAgent(t *testing.T) {
	c, _ := simCluster(t, 2, nil)
	s := subscribe(t, c, frameworkInfo())
	a0, a1 := c.agents[0].id, c.agents[1].id
	s.decline(s.offerOn(a0), 3600)
	s.decline(s.offerOn(a1), 0)
	s.offerOn(a1)
	for _, ev := range s.barrier() {
		if ev.Type == scheduler.Event_OFFERS {
			for _, o := range ev.Offers.Offers {
				if o.AgentID.Value == a0 {
					t.Fatalf("agent %s offered again within its decline filter", a0)
				}
			}
		}
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_REVIVE})
	s.offerOn(a0)
}

func TestSimConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		sim  SimConfig
	}{
		{"no agents", SimConfig{}},
		{"too many agents", SimConfig{Agents: MaxSimAgents + 1}},
		{"negative cpus", SimConfig{Agents: 1, AgentCPUs: -1}},
		{"max below min", SimConfig{Agents: 1, TaskMin: 2 * time.Second, TaskMax: time.Second}},
		{"fail ratio above 1", SimConfig{Agents: 1, FailRatio: 1.5}},
		{"negative idle", SimConfig{Agents: 1, ExecutorIdle: -time.Second}},
	} {
		sim := tc.sim
		_, err := New(Config{WorkDir: t.TempDir(), Sim: &sim})
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", tc.name, err)
		}
	}
}

// checkCharges compares every agent's running charge with the sum of what
// its live executors and their unreleased tasks hold, and the live
// executors' token index with the executors.
func checkCharges(t *testing.T, c *Cluster) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := tokenIndexMismatch(c); m != "" {
		t.Errorf("executor tokens: %s", m)
	}
	for _, a := range c.agents {
		var want mesos.Resources
		for e := range a.live {
			want.Add(e.resources...)
			for _, tk := range e.tasks {
				if !tk.released {
					want.Add(tk.resources...)
				}
			}
		}
		if got, sum := summary(a.used), summary(want); got != sum {
			t.Errorf("agent %s charged %+v, its executors and tasks hold %+v", a.hostname, got, sum)
		}
		free := a.total.Minus(want...)
		for _, fw := range c.frameworks {
			if o := fw.offers[a.id]; o != nil {
				free.Subtract(o.resources...)
			}
		}
		if got, sum := summary(a.free), summary(free); got != sum {
			t.Errorf("agent %s free pool %+v, want total - used - offered = %+v", a.hostname, got, sum)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestCloneResources(t *testing.T) {
	rs, err := agentResources(Config{CPUs: 2, MemMB: 512, DiskMB: 100, Ports: "[31000-31001, 31005-31005]"})
	if err != nil {
		t.Fatal(err)
	}
	rs = append(rs, mesos.Resource{Name: "gpus", Type: mesos.SET.Enum(), Set: &mesos.Value_Set{Item: []string{"a", "b"}}, Role: strPtr("*")})
	same := func(a, b mesos.Resources) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !a[i].Equivalent(b[i]) || a[i].GetRole() != b[i].GetRole() {
				return false
			}
		}
		return true
	}
	got := cloneResources(rs)
	if !same(got, rs) {
		t.Fatalf("clone %v of %v", got, rs)
	}
	got[0].Scalar.Value, got[3].Ranges.Range[0].Begin, got[4].Set.Item[0] = 99, 1, "z"
	if rs[0].Scalar.Value != 2 || rs[3].Ranges.Range[0].Begin != 31000 || rs[4].Set.Item[0] != "a" {
		t.Fatalf("the clone shares values with the original: %v", rs)
	}
	reserved := mesos.Resources{scalar("cpus", 1)}
	reserved[0].Reservations = []mesos.Resource_ReservationInfo{{Role: strPtr("r")}}
	if c := cloneResources(reserved); !same(c, reserved) || &c[0].Reservations[0] == &reserved[0].Reservations[0] {
		t.Fatalf("reserved resources cloned as %v", c)
	}
}

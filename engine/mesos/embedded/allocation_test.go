package embedded

import (
	"math"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

func testPool(cpus, mem float64) mesos.Resources {
	return mesos.Resources{scalar("cpus", cpus), scalar("mem", mem)}
}

func testFramework(id string, connected bool) *framework {
	fw := &framework{id: id, executors: map[execKey]*executor{}, tasks: map[string]*task{},
		filters: map[string][]*filter{}, offers: map[string]*offer{}}
	if connected {
		fw.sub = newEventStream(streamFormat{}, "s-"+id)
	}
	return fw
}

// TestPlanOffers: who is offered which agent's pool in one round.
func TestPlanOffers(t *testing.T) {
	type setup struct {
		agents []*agent
		fws    []*framework
	}
	mk := func(pools ...mesos.Resources) []*agent {
		var out []*agent
		for i, p := range pools {
			a := newAgent(i, "S"+string(rune('0'+i)), "h", p, true)
			out = append(out, a)
		}
		return out
	}
	cases := []struct {
		name  string
		setup func() setup
		want  []string // "fw@agent", in order
	}{
		{"no frameworks", func() setup { return setup{mk(testPool(1, 128)), nil} }, nil},
		{"first framework in order gets the whole pool", func() setup {
			return setup{mk(testPool(1, 128)), []*framework{testFramework("A", true), testFramework("B", true)}}
		}, []string{"A@S0"}},
		{"one framework gets every agent", func() setup {
			return setup{mk(testPool(1, 128), testPool(2, 256)), []*framework{testFramework("A", true)}}
		}, []string{"A@S0", "A@S1"}},
		{"an outstanding offer on the agent passes it on", func() setup {
			as := mk(testPool(1, 128))
			a, b := testFramework("A", true), testFramework("B", true)
			a.offers["S0"] = &offer{id: "o", fw: a, agent: as[0]}
			return setup{as, []*framework{a, b}}
		}, []string{"B@S0"}},
		{"a filter covering the pool passes it on", func() setup {
			as := mk(testPool(1, 128))
			a, b := testFramework("A", true), testFramework("B", true)
			a.filters["S0"] = []*filter{{agent: as[0], resources: testPool(2, 256)}}
			return setup{as, []*framework{a, b}}
		}, []string{"B@S0"}},
		{"a filter smaller than the pool does not", func() setup {
			as := mk(testPool(1, 128))
			a := testFramework("A", true)
			a.filters["S0"] = []*filter{{agent: as[0], resources: testPool(0.5, 128)}}
			return setup{as, []*framework{a}}
		}, []string{"A@S0"}},
		{"a filter on another agent does not", func() setup {
			as := mk(testPool(1, 128), testPool(1, 128))
			a := testFramework("A", true)
			a.filters["S1"] = []*filter{{agent: as[1], resources: testPool(1, 128)}}
			return setup{as, []*framework{a}}
		}, []string{"A@S0"}},
		{"an empty or too small pool is not offered", func() setup {
			as := mk(nil, testPool(0.001, 16))
			return setup{as, []*framework{testFramework("A", true)}}
		}, nil},
		{"everyone filtered: nothing", func() setup {
			as := mk(testPool(1, 128))
			a := testFramework("A", true)
			a.filters["S0"] = []*filter{{agent: as[0], resources: testPool(1, 128)}}
			return setup{as, []*framework{a}}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.setup()
			var got []string
			for _, g := range planOffers(s.agents, s.fws) {
				got = append(got, g.fw.id+"@"+g.agent.id)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
			for _, a := range s.agents {
				if !contains(a.free, a.total) || !contains(a.total, a.free) {
					t.Fatalf("planOffers changed agent %s's pool: %v", a.id, a.free)
				}
			}
		})
	}
}

// TestEligibleFrameworks: connected, unsuppressed, in id order (suppress
// and revive act through this).
func TestEligibleFrameworks(t *testing.T) {
	b, a, gone, quiet := testFramework("b", true), testFramework("a", true), testFramework("c", false), testFramework("d", true)
	quiet.suppressed = true
	got := eligibleFrameworks(map[string]*framework{"b": b, "a": a, "c": gone, "d": quiet})
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("got %v", got)
	}
	quiet.suppressed = false // revived
	if got := eligibleFrameworks(map[string]*framework{"d": quiet}); len(got) != 1 {
		t.Fatalf("revived framework not eligible: %v", got)
	}
}

func TestRefuseFor(t *testing.T) {
	secs := func(v float64) *mesos.Filters { return &mesos.Filters{RefuseSeconds: &v} }
	cases := []struct {
		name    string
		filters *mesos.Filters
		want    time.Duration
	}{
		{"no filters: the Mesos default", nil, 5 * time.Second},
		{"no refuse_seconds: the default", &mesos.Filters{}, 5 * time.Second},
		{"given", secs(30), 30 * time.Second},
		{"fractional", secs(0.25), 250 * time.Millisecond},
		{"zero: no filter", secs(0), 0},
		{"negative: the default", secs(-1), 5 * time.Second},
		{"NaN: the default", secs(math.NaN()), 5 * time.Second},
		{"huge: a year", secs(1e300), maxRefuse},
		{"+Inf: a year", secs(math.Inf(1)), maxRefuse},
	}
	for _, tc := range cases {
		if got := refuseFor(tc.filters); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAgentsToAllocate(t *testing.T) {
	as := []*agent{newAgent(0, "S0", "h", nil, true), newAgent(1, "S1", "h", nil, true), newAgent(2, "S2", "h", nil, true)}
	if got := agentsToAllocate(as, []*agent{as[1]}, true); len(got) != 3 {
		t.Fatalf("all: got %d agents", len(got))
	}
	got := agentsToAllocate(as, []*agent{as[2], as[0]}, false)
	if len(got) != 2 || got[0] != as[0] || got[1] != as[2] {
		t.Fatalf("queued: not in agent order: %v", got)
	}
	if got := agentsToAllocate(as, nil, false); len(got) != 0 {
		t.Fatalf("nothing queued: got %v", got)
	}
}

func TestOfferFor(t *testing.T) {
	a := newAgent(0, "S0", "host", testPool(2, 256), true)
	fw, other := testFramework("A", true), testFramework("B", true)
	fw.info.Capabilities = []mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE}}
	fw.info.Roles = []string{"jobs"}
	mine := &executor{fw: fw, agent: a, id: "e1"}
	theirs := &executor{fw: other, agent: a, id: "e2"}
	a.live[mine], a.live[theirs] = true, true
	mo := offerFor("O1", fw, a, a.free, nil)
	if mo.ID.Value != "O1" || mo.FrameworkID.Value != "A" || mo.AgentID.Value != "S0" || mo.Hostname != "host" {
		t.Fatalf("ids: %+v", mo)
	}
	if mo.AllocationInfo == nil || mo.AllocationInfo.GetRole() != "jobs" {
		t.Fatalf("MULTI_ROLE framework: allocation info %v", mo.AllocationInfo)
	}
	if len(mo.ExecutorIDs) != 1 || mo.ExecutorIDs[0].Value != "e1" {
		t.Fatalf("executor ids: %v (only the framework's own)", mo.ExecutorIDs)
	}
	if mo2 := offerFor("O2", other, a, a.free, nil); mo2.AllocationInfo != nil {
		t.Fatal("a framework without MULTI_ROLE got allocation info")
	}
}

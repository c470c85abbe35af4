package offers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func res(cpus float64, mem int64) Resources { return Resources{CPU: CPUs(cpus), MemMB: mem} }

func offer(id, agent string, cpus float64, mem int64) Offer {
	return Offer{ID: id, AgentID: agent, Hostname: agent + ".example", Free: res(cpus, mem)}
}

// shards returns n requests of one job with the given kind, app and sizes.
func shards(job string, kind Kind, n int, seq int64, app string, task, exec Resources) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{Job: job, Shard: i, Kind: kind, App: app, Task: task, Executor: exec, Seq: seq}
	}
	return out
}

func reqs(groups ...[]Request) []Request { return slices.Concat(groups...) }

// summary renders a plan compactly: "o1: a/0/R* a/1/R" per offer (* charges
// the executor), "decline: ...", and "job/shard/KIND reason" per unplaced.
func summary(p Plan) []string {
	var out []string
	ids := make([]string, 0, len(p.Launches))
	for id := range p.Launches {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		var ls []string
		for _, l := range p.Launches[id] {
			s := fmt.Sprintf("%s/%d/%s", l.Request.Job, l.Request.Shard, l.Request.Kind.String()[:1])
			if l.ChargesExecutor {
				s += "*"
			}
			ls = append(ls, s)
		}
		out = append(out, id+": "+strings.Join(ls, " "))
	}
	out = append(out, "decline: "+strings.Join(p.Decline, " "))
	for _, u := range p.Unplaced {
		out = append(out, fmt.Sprintf("%s/%d/%s %s", u.Job, u.Shard, u.Kind.String()[:1], u.Reason))
	}
	return out
}

func TestMatchTable(t *testing.T) {
	noExec := Resources{}
	exec := res(0.5, 100)
	running := func(keys ...string) map[ExecutorKey]bool {
		m := map[ExecutorKey]bool{}
		for _, k := range keys {
			app, agent, _ := strings.Cut(k, "@")
			m[ExecutorKey{app, agent}] = true
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		in     Input
		want   []string
		detail string // substring expected in every Unplaced.Detail
	}{{
		name: "fixed point: 0.1 + 0.2 cpus fit in 0.3",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 0.3, 100)},
			Requests: reqs(shards("x", Failover, 1, 1, "app", res(0.1, 50), noExec), shards("y", Failover, 1, 2, "app", res(0.2, 50), noExec)),
			Running:  running("app@a1"),
		},
		want: []string{"o1: x/0/F y/0/F", "decline: "},
	}, {
		name: "best fit: least cpu left after placement",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 2, 1000), offer("o2", "a2", 1, 1000), offer("o3", "a3", 0.5, 1000)},
			Requests: shards("x", Failover, 1, 1, "app", res(0.6, 10), noExec),
			Running:  running("app@a1", "app@a2", "app@a3"),
		},
		want: []string{"o2: x/0/F", "decline: o1 o3"},
	}, {
		name: "best fit skips offers short of memory",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 2, 1000), offer("o2", "a2", 1, 10)},
			Requests: shards("x", Failover, 1, 1, "app", res(0.6, 100), noExec),
			Running:  running("app@a1", "app@a2"),
		},
		want: []string{"o1: x/0/F", "decline: o2"},
	}, {
		name: "prefers the agent where the executor runs over a tighter fit",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 4, 1000), offer("o2", "a2", 2, 1000)},
			Requests: shards("x", Failover, 1, 1, "app", res(0.5, 10), exec),
			Running:  running("app@a1"),
		},
		want: []string{"o1: x/0/F", "decline: o2"},
	}, {
		name: "executor charged once per agent across two offers",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 2, 1000), offer("o2", "a1", 2, 1000)},
			Requests: shards("x", Ready, 3, 1, "app", res(0.6, 10), exec),
		},
		want: []string{"o1: x/0/R* x/1/R", "o2: x/2/R", "decline: "},
	}, {
		name: "executor charged once per app per agent, two apps",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 4, 1000)},
			Requests: reqs(shards("x", Ready, 2, 1, "p", res(0.5, 10), exec), shards("y", Ready, 2, 2, "q", res(0.5, 10), exec)),
		},
		want: []string{"o1: x/0/R* x/1/R y/0/R* y/1/R", "decline: "},
	}, {
		name: "running executor is not charged; false in Running means not running",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000), offer("o2", "a2", 1, 1000)},
			Requests: reqs(shards("x", Failover, 1, 1, "p", res(1, 10), exec), shards("y", Failover, 1, 2, "q", res(0.5, 10), exec)),
			Running:  map[ExecutorKey]bool{{"p", "a1"}: true, {"q", "a2"}: false},
		},
		want: []string{"o1: x/0/F", "o2: y/0/F*", "decline: "},
	}, {
		name: "executor that does not fit beside the task blocks it",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000)},
			Requests: shards("x", Failover, 1, 1, "app", res(0.6, 10), exec),
		},
		want:   []string{"decline: o1", "x/0/F insufficient_cpu"},
		detail: "plus executor cpus=0.500 mem=100MB",
	}, {
		name: "gang rolls back and the next job uses the capacity",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000), offer("o2", "a2", 1, 1000)},
			Requests: reqs(shards("big", Ready, 3, 1, "app", res(0.8, 10), exec), shards("small", Ready, 2, 2, "app", res(0.5, 10), exec)),
			Running:  running("app@a1", "app@a2"),
		},
		want: []string{"o1: small/0/R small/1/R", "decline: o2", "big/0/R gang_incomplete", "big/1/R gang_incomplete", "big/2/R gang_incomplete"},
	}, {
		name: "gang rollback also undoes executor charges",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000), offer("o2", "a2", 1, 1000)},
			Requests: reqs(shards("big", Ready, 3, 1, "app", res(0.5, 10), exec), shards("other", Failover, 1, 9, "app", res(0.5, 10), noExec)),
		},
		want: []string{"o1: other/0/F*", "decline: o2", "big/0/R gang_incomplete", "big/1/R gang_incomplete", "big/2/R gang_incomplete"},
	}, {
		name: "gang detail names the short resource",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 8, 100)},
			Requests: shards("x", Ready, 2, 1, "app", res(0.1, 60), noExec),
			Running:  running("app@a1"),
		},
		want:   []string{"decline: o1", "x/0/R gang_incomplete", "x/1/R gang_incomplete"},
		detail: "1 of 2 shards placed before shard 1 did not fit: insufficient_mem: mem short",
	}, {
		name: "gang may spread over offers and agents",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000), offer("o2", "a2", 1, 1000), offer("o3", "a3", 1, 1000)},
			Requests: shards("x", Ready, 3, 1, "app", res(1, 10), noExec),
		},
		want: []string{"o1: x/0/R*", "o2: x/1/R*", "o3: x/2/R*", "decline: "},
	}, {
		name: "failover before ready even when ready is older",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000)},
			Requests: reqs(shards("old", Ready, 1, 1, "app", res(1, 10), noExec), shards("new", Failover, 1, 5, "app", res(1, 10), noExec)),
		},
		want: []string{"o1: new/0/F*", "decline: ", "old/0/R gang_incomplete"},
	}, {
		name: "oldest first, not by name",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000)},
			Requests: reqs(shards("alpha", Ready, 1, 2, "app", res(1, 10), noExec), shards("zeta", Ready, 1, 1, "app", res(1, 10), noExec)),
		},
		want: []string{"o1: zeta/0/R*", "decline: ", "alpha/0/R gang_incomplete"},
	}, {
		name: "oldest is the smallest seq of the job's requests; ties by name",
		in: Input{
			Offers: []Offer{offer("o1", "a1", 1, 1000)},
			Requests: []Request{
				{Job: "zeta", Shard: 0, App: "app", Task: res(0.5, 1), Seq: 9},
				{Job: "zeta", Shard: 1, App: "app", Task: res(0.5, 1), Seq: 3},
				{Job: "beta", Shard: 0, App: "app", Task: res(1, 1), Seq: 3},
				{Job: "alpha", Shard: 0, App: "app", Task: res(1, 1), Seq: 4},
			},
		},
		want: []string{"o1: beta/0/R*", "decline: ", "zeta/0/R gang_incomplete", "zeta/1/R gang_incomplete", "alpha/0/R gang_incomplete"},
	}, {
		name: "failover places partially",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 1, 1000)},
			Requests: shards("x", Failover, 3, 1, "app", res(0.5, 10), noExec),
		},
		want: []string{"o1: x/0/F* x/1/F", "decline: ", "x/2/F insufficient_cpu"},
	}, {
		name: "same job and shard as READY and FAILOVER are distinct",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 2, 1000)},
			Requests: reqs(shards("x", Ready, 1, 1, "app", res(0.5, 10), noExec), shards("x", Failover, 1, 1, "app", res(0.5, 10), noExec)),
		},
		want: []string{"o1: x/0/F* x/0/R", "decline: "},
	}, {
		name: "duplicate placed once",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 4, 1000)},
			Requests: reqs(shards("x", Ready, 2, 1, "app", res(0.5, 10), noExec), shards("x", Ready, 1, 1, "app", res(0.5, 10), noExec)),
		},
		want: []string{"o1: x/0/R* x/1/R", "decline: ", "x/0/R duplicate"},
	}, {
		name: "no offers",
		in: Input{
			Requests: reqs(shards("x", Ready, 2, 1, "app", res(0.5, 10), noExec), shards("y", Failover, 1, 2, "app", res(0.5, 10), noExec)),
		},
		want:   []string{"decline: ", "y/0/F no_offers", "x/0/R no_offers", "x/1/R no_offers"},
		detail: "no offers",
	}, {
		name: "insufficient memory",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 4, 100)},
			Requests: shards("x", Failover, 1, 1, "app", res(0.5, 200), noExec),
		},
		want:   []string{"decline: o1", "x/0/F insufficient_mem"},
		detail: "largest free cpus=4.000, largest free mem=100MB",
	}, {
		name: "cpu on one offer, memory on another",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 2, 10), offer("o2", "a2", 0.1, 1000)},
			Requests: shards("x", Failover, 1, 1, "app", res(1, 100), noExec),
		},
		want:   []string{"decline: o1 o2", "x/0/F insufficient_resources"},
		detail: "no single offer has both",
	}, {
		name: "decline lists untouched offers sorted; duplicate offer ids count once",
		in: Input{
			Offers:   []Offer{offer("o9", "a1", 1, 1), offer("o3", "a2", 1, 1), offer("o5", "a3", 1, 1000), offer("o3", "a2", 9, 9999)},
			Requests: shards("x", Failover, 1, 1, "app", res(1, 100), noExec),
		},
		want: []string{"o5: x/0/F*", "decline: o3 o9"},
	}, {
		name: "invalid requests are reported",
		in: Input{
			Offers: []Offer{offer("o1", "a1", 4, 1000)},
			Requests: []Request{
				{Job: "", App: "app"},
				{Job: "x", Shard: -1, App: "app"},
				{Job: "x", Kind: 5, App: "app"},
				{Job: "x", App: "app", Task: Resources{CPU: -1}},
				{Job: "x", App: "app", Executor: Resources{MemMB: -1}},
			},
		},
		want: []string{"decline: o1", "/0/R invalid_request", "x/-1/R invalid_request", "x/0/K invalid_request", "x/0/R invalid_request", "x/0/R invalid_request"},
	}, {
		name: "zero-size task fits an exhausted offer",
		in: Input{
			Offers:   []Offer{offer("o1", "a1", 0, 0)},
			Requests: shards("x", Ready, 2, 1, "app", Resources{}, Resources{}),
		},
		want: []string{"o1: x/0/R* x/1/R", "decline: "},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := Match(tc.in)
			if got := summary(p); !slices.Equal(got, tc.want) {
				t.Errorf("plan:\n got %q\nwant %q", got, tc.want)
			}
			for _, u := range p.Unplaced {
				if !strings.Contains(u.Detail, tc.detail) || u.Detail == "" {
					t.Errorf("detail %q does not contain %q", u.Detail, tc.detail)
				}
			}
			checkInvariants(t, tc.in, p)
		})
	}
}

func TestLaunchFields(t *testing.T) {
	in := Input{
		Offers:   []Offer{offer("o1", "a1", 2, 1000)},
		Requests: shards("x", Failover, 1, 7, "app", res(0.5, 10), res(0.1, 5)),
	}
	p := Match(in)
	want := Launch{Request: in.Requests[0], OfferID: "o1", AgentID: "a1", ChargesExecutor: true}
	if got := p.Launches["o1"]; len(got) != 1 || got[0] != want {
		t.Fatalf("launches = %+v, want [%+v]", got, want)
	}
	if p.Decline != nil || p.Unplaced != nil {
		t.Fatalf("decline %v unplaced %v", p.Decline, p.Unplaced)
	}
	if empty := Match(Input{}); empty.Launches == nil || len(empty.Launches) != 0 {
		t.Fatalf("empty plan launches = %#v", empty.Launches)
	}
}

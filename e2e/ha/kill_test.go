//go:build e2e

package ha

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// kill -9 of the leader during steady firing, ten times in a row, each
// time restarting the killed instance as a standby so that three stay.
// Planned in advance: misfire=true jobs fire every 2 s through the whole
// window (their executions, 1.2 s each, are running at most kills), and a
// misfire=false job fires twice in each takeover gap. Afterwards: one
// leader at a time, every kill followed by a new leader that launched, no
// task run twice or killed, each misfire=true shard run exactly once per
// fire, each gap's missed fires of the misfire=false job run exactly once.
func TestKillLeaderTenTimes(t *testing.T) {
	t.Parallel()
	const (
		kills = 10
		cycle = 6 * time.Second
	)
	c := newCluster(t, sharedEnsemble(t), 2*time.Second)
	for range 3 {
		c.add(instOpts{})
	}
	first, _ := c.awaitLeader(nil, time.Time{})
	c.publish(first)

	start := time.Now().Add(planLead).Truncate(time.Second)
	slots := slotsFrom(start.Add(3*time.Second), cycle, kills)
	end := slots[kills-1].Add(cycle)
	exact := c.planJobs(first, "ex", start, end, 2, 1.2, slots)

	var killed []time.Time
	for i, s := range slots {
		// The kill starts 0.5 s before the slot: under load it lands up to 0.35 s
		// later, still before the gap the check opens 0.15 s before the slot;
		// the new leader comes no sooner than the 2 s session after it, so the
		// fire a second after the slot is in the gap too.
		leader := c.steady(s.Add(-500 * time.Millisecond))
		dead := leader.life().Kill9()
		killed = append(killed, dead)
		t.Logf("kill %d: %s at %s (slot %s)", i+1, leader.name, dead.Format("15:04:05.000"), s.Format("15:04:05"))
		leader.start() // back as a standby
		next, since := c.awaitLeader(leader, dead)
		t.Logf("kill %d: %s leads from %s", i+1, next.name, since.Format("15:04:05.000"))
	}
	c.drain(end.Add(time.Second))

	ts := c.checkOneLeader(nil)
	rs := c.runs()
	checkRuns(t, rs)
	for _, j := range exact {
		checkExact(t, rs, j.name, 2, len(j.fires))
	}
	n := checkGapJob(t, rs, c.acting(ts), "gap", slots)
	running := runningAt(rs, killed)
	t.Logf("terms:\n%s", joinLines(ts))
	t.Logf("%d terms; %d of %d gaps checked exactly; tasks were running at %d of %d kills", len(ts), n, kills, running, kills)
	if running == 0 {
		t.Errorf("no task was running at any kill: the takeovers were not tested with running tasks")
	}
	if n < kills/2 {
		t.Errorf("only %d of %d slots fell into a takeover gap: the kills missed their plan", n, kills)
	}
	c.checkSettled()
}

// steady waits until the cluster is steady (three instances up, a leader
// that has launched a task in its term), then until `at`, and returns the
// leader. If the cluster is not steady by then the fault comes late, which
// the checks allow for.
func (c *cluster) steady(at time.Time) *instance {
	c.t.Helper()
	var leader *instance
	eventually(c.t, waitLong, func() bool {
		for _, in := range c.instances() {
			if !in.life().Running() {
				return false
			}
		}
		var since time.Time
		leader, since = c.leaderSince()
		if leader == nil {
			return false
		}
		for _, r := range c.runs() {
			if r.start.After(since) {
				return true
			}
		}
		return false
	}, "a leader that launched a task in its term (terms:\n%s)\nwhat waits, and why:\n%s", lazy(func() any { return joinLines(c.terms(nil)) }),
		lazy(func() any { return c.waiting() }))
	if late := time.Since(at); late > 0 {
		c.t.Logf("the cluster was steady %v after the planned fault", late.Round(time.Millisecond))
	}
	sleepUntil(at)
	if l := c.leader(); l != nil {
		return l
	}
	return leader
}

// runFresh is how recently a run must have started for awaitFreshRun: well
// within the shortest run the tests plan (0.8 s), so the run outlasts the
// fault injected right after.
const runFresh = 400 * time.Millisecond

// awaitFreshRun waits until runs.log shows a task that started within the
// last `fresh` and has not ended, and returns the leader then: a fault
// injected at once falls in that run.
func (c *cluster) awaitFreshRun(fresh time.Duration) *instance {
	c.t.Helper()
	var leader *instance
	eventually(c.t, waitLong, func() bool {
		now := time.Now()
		for _, r := range c.runs() {
			if r.ends == 0 && r.kills == 0 && r.start.After(now.Add(-fresh)) {
				leader = c.leader()
				return leader != nil
			}
		}
		return false
	}, "a task to start (runs:\n%s)", lazy(func() any { return joinLines(c.runs()) }))
	return leader
}

// waiting is what the live instances' ready and failover queues hold, with the reasons
// (for a test that timed out waiting for a launch).
func (c *cluster) waiting() string {
	var b strings.Builder
	for _, in := range c.instances() {
		if !in.life().Running() {
			continue
		}
		for _, q := range []string{"/api/job/tasks/ready", "/api/job/tasks/failover"} {
			code, body, _, err := in.request(http.MethodGet, q, nil)
			fmt.Fprintf(&b, "  %s %s: %d %v %s\n", in.name, q, code, err, harness.Tail(string(body), 20))
		}
	}
	return b.String()
}

// runningAt counts the instants at which some task was running.
func runningAt(rs []*shardRun, instants []time.Time) int {
	n := 0
	for _, at := range instants {
		for _, r := range rs {
			if r.start.Before(at) && r.end.After(at) {
				n++
				break
			}
		}
	}
	return n
}

// checkSettled checks that every instance runs, exactly one leads, and
// every instance names that one as the leader.
func (c *cluster) checkSettled() {
	c.t.Helper()
	var leaders []string
	var named []string
	ok := poll(waitLong, func() bool {
		leaders, named = nil, nil
		for _, in := range c.instances() {
			if !in.life().Running() {
				c.t.Fatalf("%s is not running", in.name)
			}
			v, err := in.view()
			if err != nil || v.Leader == nil {
				return false
			}
			if v.Role == "leader" {
				leaders = append(leaders, in.base)
			}
			named = append(named, v.Leader.URL)
		}
		for _, u := range named {
			if len(leaders) != 1 || u != leaders[0] {
				return false
			}
		}
		return true
	})
	if !ok {
		c.t.Errorf("the cluster did not settle on one leader: leaders %v, named by the instances %v", leaders, named)
	}
}

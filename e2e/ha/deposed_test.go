package ha

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A leader deposed while it keeps its state: paused with SIGSTOP past its
// session timeout, or cut off from ZooKeeper and Mesos by the network. It
// reaches both through proxies, so every request it sends after it comes
// back is seen. A standby takes over; the old leader comes back and must
// neither commit a registry write (only its new election node), nor have a
// Mesos call accepted, nor lead again: it rejoins as a standby. What it had
// in flight when deposed: a trigger it had just accepted (must run once),
// a trigger whose handler was reading the body (must be refused with a
// 503, then runs once when retried elsewhere), a trigger sent to it while
// deposed (refused or forwarded; runs once), a task whose end it was about
// to hear (ends once, is not relaunched), running tasks (not killed), cron
// fires during the takeover (misfire=true: each once; misfire=false: the
// gap's two fires once).

func TestPausedLeaderCommitsNothing(t *testing.T) {
	t.Parallel()
	testDeposedLeader(t, deposition{
		depose: func(a *instance, _ *proxies) {
			if err := a.life().signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		},
		restore: func(a *instance, _ *proxies) {
			if err := a.life().signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		},
		paused: true,
	})
}

// The proxies cut the leader off (bytes held, connections left open, as
// when packets are dropped; see proxy_test.go for why a proxy and not
// network namespaces). It keeps running: it must step down on its own
// (its connection suspended) before the standby can lead.
func TestPartitionedLeaderStepsDown(t *testing.T) {
	t.Parallel()
	testDeposedLeader(t, deposition{
		depose:  func(_ *instance, ps *proxies) { ps.gate.Cut() },
		restore: func(_ *instance, ps *proxies) { ps.gate.Heal() },
	})
}

type deposition struct {
	depose, restore func(a *instance, ps *proxies)
	paused          bool // the span is a SIGSTOP (the timeline ends the term at its lease)
}

func testDeposedLeader(t *testing.T, d deposition) {
	zk := sharedEnsemble(t)
	c := newCluster(t, zk, 2*time.Second)
	ps := startProxies(t, zk, c.mesos.url)
	a := c.add(ps.opts())
	if l, _ := c.awaitLeader(nil, time.Time{}); l != a {
		t.Fatalf("%s leads, want %s (the first to join)", l.name, a.name)
	}
	b, other := c.add(instOpts{}), c.add(instOpts{})
	c.publish(a)

	start := time.Now().Add(planLead).Truncate(time.Second)
	at := slotsFrom(start.Add(6*time.Second), time.Second, 1)[0] // the slot: fires at `at` and a second later
	exact := windowJobs("px", every(start, at.Add(14*time.Second), 2*time.Second))
	gaps := windowJobs("gap", slotFires([]time.Time{at}))
	for _, j := range exact {
		c.register(a, c.newJob(j.name, j.cron, 2, 1.5, true))
	}
	for _, j := range gaps {
		c.register(a, c.newJob(j.name, j.cron, 1, 0.1, false))
	}
	c.register(a, c.newJob("tr", "", 1, 0.2, false))
	if time.Now().After(start) {
		t.Fatalf("registering the jobs ended after their window began (%v): the plan no longer holds", start)
	}

	// In flight when the leader is deposed 200 ms before the slot.
	sleepUntil(at.Add(-4500 * time.Millisecond))
	c.triggerUntilAccepted(a, "tr", "long", 5) // ends while the leader is away
	sleepUntil(at.Add(-500 * time.Millisecond))
	slow, err := a.slowPost("/api/job/trigger", c.triggerBody("tr", "slow", 0.2), 10)
	if err != nil {
		t.Fatal(err)
	}
	if pre := c.trigger(a, "tr", "pre", 0.2); !pre.accepted() {
		t.Fatalf("trigger before the deposition: %v", pre)
	}
	d.depose(a, ps)
	gone := time.Now()
	t.Logf("%s deposed at %s (slot %s)", a.name, gone.Format("15:04:05.000"), at.Format("15:04:05"))
	during := make(chan answer, 1)
	go func() { during <- c.trigger(a, "tr", "during", 0.2) }()

	next, since := c.awaitLeader(a, gone)
	eventually(t, waitLong, func() bool {
		for _, r := range c.runs() {
			if r.start.After(since) {
				return true
			}
		}
		return false
	}, "%s to launch a task in its term", next.name)
	if err := slow.finish(); err != nil { // the kernel holds it for the deposed leader
		t.Fatal(err)
	}
	back := time.Now()
	d.restore(a, ps)
	t.Logf("%s leads from %s; %s back at %s", next.name, since.Format("15:04:05.000"), a.name, back.Format("15:04:05.000"))

	if ans := slow.wait(waitLong); !ans.clearRefusal() {
		t.Errorf("a trigger the deposed leader was reading when deposed: %v, want a clear 503 (and no run)", ans)
	}
	ans := <-during
	t.Logf("trigger sent to %s while deposed: %v", a.name, ans)
	if !ans.accepted() && !ans.clearRefusal() {
		t.Errorf("trigger sent to the deposed leader: %v, want accepted or a clear 503", ans)
	}
	eventually(t, waitLong, func() bool {
		v, err := a.view()
		return err == nil && v.Role == "standby" && v.Leader != nil && v.Leader.URL == next.base
	}, "%s back as a standby naming %s the leader", a.name, next.name)
	for _, key := range []string{"slow", "during"} {
		c.triggerUntilAccepted(other, "tr", key, 0.2)
	}
	c.drain(at.Add(15 * time.Second))

	var pauses map[*proc][]pause
	if d.paused {
		pauses = map[*proc][]pause{a.life(): {{from: gone, to: back}}}
	}
	ts := c.checkOneLeader(pauses)
	t.Logf("terms:\n%s", joinLines(ts))
	for _, tm := range ts {
		if tm.inst == a.name && tm.start.After(gone) {
			t.Errorf("%s led again after it was deposed: %v", a.name, tm)
		}
	}
	checkAfterwards(t, c, ps, back)
	rs := c.runs()
	checkRuns(t, rs)
	for _, j := range exact {
		checkExact(t, rs, j.name, 2, len(j.fires))
	}
	if n := checkGapJob(t, rs, deposedAt(ts, a.name, gone), "gap", []time.Time{at}); n != 1 {
		t.Errorf("the slot's fires did not both fall into the takeover gap: the deposition missed its plan")
	}
	for key, byItem := range keyRuns(rs, "tr") {
		if byItem[0] != 1 || len(byItem) != 1 {
			t.Errorf("trigger %s ran %v times (by shard), want once", key, byItem)
		}
	}
	if n := len(keyRuns(rs, "tr")); n != 4 {
		t.Errorf("%d of the 4 triggers ran: %v", n, keyRuns(rs, "tr"))
	}
	if running := runningAt(rs, []time.Time{gone}); running == 0 {
		t.Errorf("no task was running when the leader was deposed")
	}
	c.checkSettled()
	if l := c.leader(); l != next && l != b && l != other {
		t.Errorf("the leader at the end is %v, want a standby of the deposition", l)
	}
}

// deposedAt ends the deposed leader's terms when it was deposed: nothing
// it sent afterwards committed (checkAfterwards), so from then on every
// fire is the next leader's to handle.
func deposedAt(ts []term, inst string, gone time.Time) []term {
	out := append([]term(nil), ts...)
	for i, tm := range out {
		if tm.inst == inst && tm.start.Before(gone) && (tm.end.IsZero() || tm.end.After(gone)) {
			out[i].end = gone
		}
	}
	return out
}

// checkAfterwards checks what the deposed leader sent once it was back:
// no registry write committed but its own election node, no call to the
// Mesos scheduler API accepted.
func checkAfterwards(t *testing.T, c *cluster, ps *proxies, back time.Time) {
	t.Helper()
	election := "/" + c.ns + "/ha/election/"
	writes, calls := ps.zkRec.since(back), ps.msRec.since(back)
	for _, w := range writes {
		if !w.ok {
			continue
		}
		for _, p := range w.paths {
			if !strings.Contains(p, election) {
				t.Errorf("the deposed leader committed a registry write after it came back: %v", w)
				break
			}
		}
	}
	for _, call := range calls {
		if call.path == "/api/v1/scheduler" && call.accepted() {
			t.Errorf("Mesos accepted a call from the deposed leader after it came back: %v", call)
		}
	}
	t.Logf("after it came back the deposed leader sent %d ZooKeeper writes:\n%s", len(writes), joinLines(writes))
	t.Logf("and %d Mesos requests:\n%s", len(calls), joinLines(calls))
	if code, _, _, err := c.instances()[0].request(http.MethodGet, "/healthz", nil); err != nil || code != http.StatusOK {
		t.Errorf("the deposed leader does not answer /healthz: %d %v", code, err)
	}
}

//go:build e2e

package ha

import (
	"sync"
	"testing"
	"time"
)

// The quorum lost and regained, then a ZooKeeper server restarted, on an
// ensemble of the test's own. The leader steps down within its session
// timeout of losing the quorum, nobody leads without it, one instance
// leads again once it is back, and the jobs' fires (misfire=true every 2 s
// throughout, misfire=false twice while the quorum is lost) are each run
// exactly once.
func TestZooKeeperQuorumLossAndRestart(t *testing.T) {
	t.Parallel()
	e := startEnsemble(t)
	session := 2 * time.Second
	c := newCluster(t, e.servers, session)
	for range 3 {
		c.add(instOpts{})
	}
	first, _ := c.awaitLeader(nil, time.Time{})
	c.publish(first)

	start := time.Now().Add(planLead).Truncate(time.Second)
	slot := slotsFrom(start.Add(12*time.Second), time.Second, 1)[0] // the quorum is lost from 5-2.6 s before it
	end := slot.Add(30 * time.Second)
	exact := c.planJobs(first, "qx", start, end, 2, 1.2, []time.Time{slot})

	losing, lost, regain := loseQuorum(t, e, c, slot)
	l, since := c.awaitLeader(nil, regain)
	t.Logf("%s leads from %s", l.name, since.Format("15:04:05.000"))

	c.steady(time.Now())
	e.stopNode(1)
	e.startNode(1)
	if restarted := time.Now(); restarted.After(end) {
		t.Logf("ZooKeeper server 1 restarted at %s, after the window (%s): the restart was not under cron load",
			restarted.Format("15:04:05.000"), end.Format("15:04:05"))
	} else {
		t.Logf("ZooKeeper server 1 restarted by %s", restarted.Format("15:04:05.000"))
	}
	c.drain(end.Add(time.Second))

	ts := c.checkOneLeader(nil)
	t.Logf("terms:\n%s", joinLines(ts))
	if !leaderless(ts, lost.Add(session), regain) {
		t.Errorf("a scheduler led without a ZooKeeper quorum (between %s and %s)",
			lost.Add(session).Format("15:04:05.000"), regain.Format("15:04:05.000"))
	}
	if leaderless(ts, losing.Add(-3*time.Second), losing) {
		t.Errorf("nobody led just before the quorum was lost: the step-down was not tested")
	}
	rs := c.runs()
	checkRuns(t, rs)
	for _, j := range exact {
		checkExact(t, rs, j.name, 2, len(j.fires))
	}
	if n := checkGapJob(t, rs, ts, "gap", []time.Time{slot}); n != 1 {
		t.Errorf("the slot's fires did not both fall into the time without a quorum")
	}
	if running := runningAt(rs, []time.Time{losing}); running == 0 {
		t.Errorf("no task was running when the quorum was lost")
	}
	c.checkSettled()
}

// loseQuorum stops servers 2 (9 s before the slot, the quorum holds) and 3
// (between 5 and 2.6 s before it, as soon as an execution has just
// started), then 2.5 s after the slot starts both again. It returns when the
// stop of server 3 began and ended, and when the restarts began.
func loseQuorum(t *testing.T, e *ensemble, c *cluster, slot time.Time) (losing, lost, regain time.Time) {
	c.steady(slot.Add(-9 * time.Second))
	e.stopNode(2)
	// Stopping server 2 can cost the leader its connection, and with it a
	// term; the takeover and the late fires it launches are over well within
	// the 4 s before the loss is looked for.
	sleepUntil(slot.Add(-5 * time.Second))
	// The loss must find work in flight. The qx fires come every 2 s and run
	// 1.2 s, so the 2.4 s from 5 to 2.6 s before the slot hold a launch
	// however late the fires run; 2.6 s before the slot still leaves both of
	// the slot's fires in the time without a quorum (lost + the 2 s session).
	// A run counts only if it started in the last 0.8 s, so that at least
	// 0.4 s of its 1.2 s remains: a run whose end is being written as the
	// log is read would otherwise count, and be over by the time the quorum
	// goes.
	if !poll(time.Until(slot.Add(-2600*time.Millisecond)), func() bool { return inFlight(c.runs(), time.Now().Add(-800*time.Millisecond)) }) {
		t.Logf("no task in flight by %s: the quorum is lost anyway", time.Now().Format("15:04:05.000"))
	}
	losing = time.Now()
	e.stopNode(3)
	lost = time.Now()
	t.Logf("quorum lost between %s and %s (servers 2 and 3 stopped)", losing.Format("15:04:05.000"), lost.Format("15:04:05.000"))
	sleepUntil(slot.Add(2500 * time.Millisecond))
	regain = time.Now()
	var wg sync.WaitGroup
	for _, n := range []int{2, 3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.script("start-zk-node", n); err != nil {
				t.Errorf("restart ZooKeeper server %d: %v", n, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("quorum back by %s (servers 2 and 3 serving again)", time.Now().Format("15:04:05.000"))
	return losing, lost, regain
}

// inFlight reports whether a task has started, since the given time, and
// not ended.
func inFlight(rs []*shardRun, since time.Time) bool {
	for _, r := range rs {
		if r.starts > 0 && r.ends == 0 && r.kills == 0 && r.start.After(since) {
			return true
		}
	}
	return false
}

//go:build e2e

package ha

import (
	"strings"
	"testing"
	"time"
)

// The last members of an etcd-shape cluster stopped one after the other:
// the last one has no quorum left, and each still exits on SIGTERM within
// the harness's StopGrace (Stop fails the test otherwise), its leader
// loops within the shutdown's 10 s. Both orders: the leader stopped last
// (it loses its quorum while it leads) and first (a standby takes over,
// then the last standby stops without a quorum). History is replicated
// and a job fires every second, so the stop meets commits, re-reads and
// history flushes on a store that answers none.
func TestEtcdStopWithoutQuorum(t *testing.T) {
	t.Parallel()
	for _, leaderLast := range []bool{true, false} {
		name := map[bool]string{true: "leader-last", false: "leader-first"}[leaderLast]
		t.Run(name, func(t *testing.T) {
			c := newEtcdClusterOf(t, 3, nil, true)
			leader, _ := c.awaitLeader(nil, time.Time{})
			c.publish(leader)
			c.register(leader, c.newJob("busy", "* * * * * ?", 2, 1.5, true))
			eventually(t, waitLong, func() bool { return len(c.runs()) >= 2 }, "the job running")
			var order []*instance
			for _, in := range c.insts {
				if in != leader {
					order = append(order, in)
				}
			}
			if leaderLast {
				order = append(order, leader)
			} else {
				order = append([]*instance{leader}, order...)
			}
			for _, in := range order {
				began := time.Now()
				in.life().Stop(t) // fails t past StopGrace
				t.Logf("%s exited %v after SIGTERM", in.name, time.Since(began).Round(time.Millisecond))
				if log := in.life().Log(); strings.Contains(log, "did not stop within the shutdown") {
					t.Errorf("%s: the leader's loops outlived the shutdown's budget:\n%s", in.name, log)
				}
			}
		})
	}
}

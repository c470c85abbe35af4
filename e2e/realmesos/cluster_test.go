//go:build e2e

package realmesos

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clusterFlags put schedulers on one ZooKeeper registry with a short
// session, as the instances of one cluster.
func clusterFlags(t *testing.T) []string {
	return append(sharedRegistry(t), "--zk-session-timeout", "2s", "--executor-idle-timeout", "10m")
}

// role is what a scheduler says of itself in /api/operate/cluster.
func (s *scheduler) role() string { return s.api().Role() }

// leaderOf waits for exactly one of ss to lead and returns it.
func leaderOf(t *testing.T, ss []*scheduler) *scheduler {
	t.Helper()
	var lead *scheduler
	eventually(t, waitLong, func() bool {
		lead = nil
		n := 0
		for _, s := range ss {
			if !s.exited() && s.role() == "leader" {
				lead, n = s, n+1
			}
		}
		return n == 1
	}, "exactly one leader among %d schedulers", len(ss))
	return lead
}

// TestTwoSchedulersOneSubscription: two schedulers on one registry and one
// real master: only the leader subscribes, and the framework never fails
// over between them (the original's two instances took it from each other
// about 97 times in 15 seconds).
func TestTwoSchedulersOneSubscription(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	ss := startSchedulers(t, 2, schedOpts{mesosURL: m.masterURL(), extra: clusterFlags(t)})
	lead := leaderOf(t, ss)
	lead.publishApp("recorder", recorderURL(), "bin/record.sh")
	out := outDir(t)
	lead.registerJob("one_sub", "recorder", "* * * * * ?", out, 1)
	eventually(t, waitLong, func() bool { return perItem(runsIn(t, out))[0] >= 5 }, "five runs of the cron job")
	if sub := subscribedOf(ss); len(sub) != 1 || sub[0] != lead {
		t.Fatalf("%d schedulers subscribed, want only the leader", len(sub))
	}
	if fws := m.activeFrameworks(); len(fws) != 1 {
		t.Fatalf("active frameworks at the master: %v, want one", fws)
	}
	if line := grepLine(m.masterLog(), "failed over"); line != "" {
		t.Fatalf("the framework failed over between the schedulers: %s", line)
	}
	noTaskRanTwice(t, runsIn(t, out))
}

// TestTakeoverKeepsTasksOnRealAgent: the leader is killed while its tasks
// run on the real agent; the standby takes over with the same framework id
// (checkpointing on, a week's failover timeout), the tasks keep running to
// their end, are not launched again, and the new leader records their end.
func TestTakeoverKeepsTasksOnRealAgent(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	ss := startSchedulers(t, 2, schedOpts{mesosURL: m.masterURL(), extra: clusterFlags(t)})
	lead := leaderOf(t, ss)
	next := ss[0]
	if next == lead {
		next = ss[1]
	}
	lead.publishApp("recorder", recorderURL(), "bin/slow.sh")
	out := outDir(t)
	lead.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "long", "appName": "recorder",
		"jobExecutionType": "TRANSIENT", "shardingTotalCount": 2, "shardingItemParameters": "0=8,1=8",
		"jobParameter": out, "cpuCount": 0.1, "memoryMB": 32})
	lead.trigger("long")
	eventually(t, waitLong, func() bool { return len(slowLines(t, out, "start")) == 2 }, "both shards to start")
	started := slowLines(t, out, "start")
	lead.kill9()
	if leaderOf(t, []*scheduler{next}) != next {
		t.Fatal("the standby did not take over")
	}
	eventually(t, waitLong, next.subscribed, "the new leader to subscribe")
	eventually(t, waitLong, func() bool { return len(slowLines(t, out, "end")) == 2 }, "both runs to end on the agent")
	if got := slowLines(t, out, "start"); len(got) != 2 {
		t.Fatalf("runs started %v, want only the two of the killed leader (none launched again)", got)
	}
	ended := slowLines(t, out, "end")
	// The same two tasks, in whichever order the shards ended.
	if !slices.Equal(slices.Sorted(slices.Values(started)), slices.Sorted(slices.Values(ended))) {
		t.Fatalf("started %v but ended %v", started, ended)
	}
	eventually(t, waitLong, func() bool {
		n := 0
		for _, e := range next.executions("long") {
			if e.Success && e.CompleteTime != "" {
				n++
			}
		}
		return n == 2
	}, "the new leader to record both runs as finished")
	if !strings.Contains(m.masterLog(), "checkpointing enabled") {
		t.Fatal("the framework subscribed without checkpointing")
	}
}

// slowLines returns "item taskId" of slow.sh's lines of one kind, in order.
func slowLines(t *testing.T, out, kind string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "slow.txt"))
	if err != nil {
		return nil
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if rest, ok := strings.CutPrefix(l, kind+" "); ok {
			lines = append(lines, rest)
		}
	}
	return lines
}

//go:build e2e

package realkube

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// TestLeaderKill9AdoptsPods: two schedulers on one ZooKeeper registry; the leader is
// killed with SIGKILL while a job's 3 shards run; the standby takes over, adopts the 3
// pods, takes their executors' reports and the pods' phases, deletes the pods once they
// finished, and runs nothing again: 0 duplicates, 0 lost. A team namespace's shard, running
// in its own Kubernetes namespace (kube_namespaces), goes through the takeover the same way.
func TestLeaderKill9AdoptsPods(t *testing.T) {
	zk := requireZK(t)
	ns := namespace(t)
	payNS := kubeNamespace(t, ns+"-pay")
	ports := []int{harness.FreePort(t), harness.FreePort(t)}
	urls := "http://127.0.0.1:" + itoa(ports[0]) + ",http://127.0.0.1:" + itoa(ports[1])
	extra := []string{"--zk-servers", zk, "--zk-namespace", fmt.Sprintf("ej-realkube-%d", time.Now().UnixNano()), "--zk-session-timeout", "4s",
		"--kube-namespaces", "pay=" + payNS}
	a := startScheduler(t, "scheduler-a", schedOpts{ns: ns, port: ports[0], urls: urls, extra: extra})
	b := startScheduler(t, "scheduler-b", schedOpts{ns: ns, port: ports[1], urls: urls, extra: extra})
	eventually(t, waitLong, func() bool { return a.subscribed() || b.subscribed() }, "a leader")
	leader, standby := a, b
	if b.subscribed() {
		leader, standby = b, a
	}
	leader.publishApp("rec", false)
	j := transient("survivor", "rec", 3, "sleep 12")
	j["failover"] = true
	leader.register(j)
	leader.trigger("survivor")
	leader.must(http.MethodPut, "/api/namespaces/pay", map[string]any{})
	leader.must(http.MethodPost, "/api/app?namespace=pay", map[string]any{"appName": "rec", "appURL": rec.url + "/app.tgz",
		"bootstrapScript": "bin/run.sh", "cpuCount": 0.05, "memoryMB": 64})
	leader.must(http.MethodPost, "/api/job/register?namespace=pay", map[string]any(transient("survivor", "rec", 1, "sleep 12")))
	leader.must(http.MethodPost, "/api/job/trigger?namespace=pay", "survivor")
	eventually(t, waitLong, func() bool { return rec.count("survivor", "start") == 3 && rec.count("pay~survivor", "start") == 1 },
		"the 3 shards and pay's to start")
	if len(pods(t, payNS, "")) != 1 {
		t.Errorf("pay's pod is not in %s", payNS)
	}
	leader.Kill9()
	eventually(t, waitLong, func() bool { return standby.subscribed() }, "the standby to lead")
	eventually(t, waitLong, func() bool { return rec.count("survivor", "end") == 3 }, "the 3 shards to end")
	eventually(t, waitLong, func() bool { return rec.count("pay~survivor", "end") == 1 }, "pay's shard to end")
	eventually(t, waitLong, func() bool { return len(pods(t, ns, "survivor")) == 0 && len(pods(t, payNS, "")) == 0 },
		"the adopted pods to be deleted once finished, in both namespaces")
	if e := rec.events("pay~survivor"); len(e) != 1 {
		t.Errorf("pay's job ran %d tasks, want 1: %v", len(e), e)
	}
	eventually(t, waitLong, func() bool {
		var running []any
		_ = json.Unmarshal(standby.must(http.MethodGet, "/api/job/tasks/running", nil), &running)
		return len(running) == 0
	}, "no task left running")
	evs := rec.events("survivor")
	if len(evs) != 3 {
		t.Errorf("%d tasks ran, want the 3 launched before the kill: %v", len(evs), evs)
	}
	for task, e := range evs {
		if strings.Join(e, ",") != "start,end" {
			t.Errorf("task %s: %v, want one start and one end", task, e)
		}
	}
	var failover []any
	_ = json.Unmarshal(standby.must(http.MethodGet, "/api/job/tasks/failover", nil), &failover)
	if len(failover) != 0 {
		t.Errorf("failover queue %v", failover)
	}
	if !strings.Contains(standby.Log(), "pods=4") {
		t.Errorf("the new leader did not find the 4 pods at its start:\n%s", harness.Tail(standby.Log(), 40))
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// scripts/cluster.sh with REGISTRY=etcd: three schedulers, each with an
// etcd member of its own, and mesos-local; no ZooKeeper, no MariaDB. One
// leads and the others name it; a job runs through the cluster; down
// leaves no process behind.
func TestClusterScriptEtcd(t *testing.T) {
	const n = 3
	dir := filepath.Join(t.TempDir(), "c")
	// one block: the schedulers' ports, their members' (client and peer
	// each), mesos-local's; ports found free apart could be one another's
	base := consecutivePorts(t, n+2*n+1)
	etcdBase, mesos := base+n, base+3*n
	env := []string{"REGISTRY=etcd", "SCHEDULERS=" + strconv.Itoa(n), "BASE_PORT=" + strconv.Itoa(base),
		"ETCD_PORT=" + strconv.Itoa(etcdBase), "MESOS_PORT=" + strconv.Itoa(mesos), "BIN_DIR=" + filepath.Dir(schedulerBin)}
	t.Cleanup(func() {
		if _, errs, code := clusterScript(t, nil, "down", dir); code != 0 {
			t.Errorf("cleanup: cluster.sh down exited %d: %s", code, errs)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			for i := 1; i <= n; i++ {
				b, _ := os.ReadFile(filepath.Join(dir, "logs", fmt.Sprintf("scheduler-%d.log", i)))
				t.Logf("scheduler %d log:\n%s", i, harness.Tail(string(b), 120))
			}
		}
	})
	out, errs, code := clusterScript(t, env, "up", dir)
	if code != 0 {
		t.Fatalf("cluster.sh up exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if urls := schedulerURLLine.FindAllStringSubmatch(out, -1); len(urls) != n {
		t.Fatalf("up printed scheduler URLs %q, want %d:\n%s", urls, n, out)
	}
	if !strings.Contains(out, "etcd: s1=http://127.0.0.1:") || strings.Contains(out, "zookeeper") {
		t.Errorf("up's summary does not name the etcd members alone:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "services")); err == nil {
		t.Errorf("REGISTRY=etcd started services (ZooKeeper, MariaDB)")
	}
	st, errs, code := clusterScript(t, nil, "status", dir)
	if code != 0 {
		t.Fatalf("cluster.sh status exited %d\n%s%s", code, st, errs)
	}
	pids := map[string]int{}
	leaders := map[string]bool{}
	for _, m := range statusLine.FindAllStringSubmatch(st, -1) {
		pids[m[1]], _ = strconv.Atoi(m[2])
		if i := strings.Index(m[3], `"url":"`); strings.HasPrefix(m[1], "scheduler") && i >= 0 {
			leaders[strings.SplitN(m[3][i+7:], `"`, 2)[0]] = true
		}
	}
	if len(pids) != 1+n || len(leaders) != 1 {
		t.Fatalf("status: %d running processes (want %d), leaders named %v (want one):\n%s", len(pids), 1+n, leaders, st)
	}

	s := &scheduler{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", base+1),
		Proc: &harness.Proc{Name: "scheduler-2", LogPath: filepath.Join(dir, "logs", "scheduler-2.log")}}
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)
	jobOut := outDir(t)
	s.registerJob(recorderJob("through_etcd", "rec", jobOut, 2))
	uniqueTaskIDs(t, s.runAndWait("through_etcd", jobOut, 2))

	if _, errs, code := clusterScript(t, nil, "down", dir); code != 0 {
		t.Fatalf("cluster.sh down exited %d: %s", code, errs)
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs after down", name, pid)
		}
	}
}

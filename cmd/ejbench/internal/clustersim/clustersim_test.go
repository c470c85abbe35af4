package clustersim

import (
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/go-zookeeper/zk"
)

// Job i of the cluster-sim scenario: 1 + i%10 shards, fired at second i%60
// of every minute, on app i%apps.
func TestSimJob(t *testing.T) {
	var j struct {
		JobName, AppName, Cron, JobExecutionType string
		ShardingTotalCount                       int
		CPUCount                                 float64
		MemoryMB                                 int
	}
	if err := json.Unmarshal([]byte(simJob(1234, 10)), &j); err != nil {
		t.Fatal(err)
	}
	if j.JobName != "sim-001234" || j.AppName != "sim_app_4" || j.Cron != "34 * * * * ?" || j.ShardingTotalCount != 5 ||
		j.JobExecutionType != "TRANSIENT" || j.CPUCount != simShardCPUs || j.MemoryMB != simShardMemMB {
		t.Fatalf("job 1234: %+v", j)
	}
}

// readZKStat parses ZooKeeper's srvr answer: the zxid's counter (its low
// 32 bits) and the node count.
func TestReadZKStat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4)
		_, _ = c.Read(buf)
		_, _ = c.Write([]byte("Zookeeper version: 3.9.1, built on 2023-10-10 UTC\nLatency min/avg/max: 0/0.1/9\n" +
			"Received: 10\nSent: 9\nConnections: 1\nOutstanding: 0\nZxid: 0x300000a2c\nMode: standalone\nNode count: 4242\n"))
	}()
	st, err := readZKStat(ln.Addr().String() + ",127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if st.zxid != 0xa2c || st.nodes != 4242 {
		t.Fatalf("stat %+v, want zxid counter 0xa2c and 4242 nodes", st)
	}
}

// ZooKeeper's own write rate (a short run) against the real ZooKeeper of
// EJ_TEST_ZK, and deleteTree removing a tree of a few levels.
func TestZKRateAndDeleteTree(t *testing.T) {
	servers := testproxy.ZK(t)
	root := fmt.Sprintf("/ejbench-test-%d", time.Now().UnixNano())
	r, err := measureZKRate(t.Context(), servers, root, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.seqTxnPerSec <= 0 || r.parTxnPerSec <= 0 || r.multiTxns <= 0 || r.multiOps != r.multiTxns*zkRateMultiOps {
		t.Fatalf("rates %+v", r)
	}
	conn, _, err := zk.Connect([]string{servers}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if ok, _, _ := conn.Exists(root); ok {
		t.Fatalf("%s left behind by the rate benchmark", root)
	}
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{root, root + "/a", root + "/a/x", root + "/a/y", root + "/b"} {
		if _, err := conn.Create(p, []byte("v"), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	if err := deleteTree(t.Context(), conn, root, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := conn.Exists(root); ok {
		t.Fatalf("%s still exists", root)
	}
}

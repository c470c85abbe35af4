package zk

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// ensembleNodes returns the client addresses of the 3-server ensemble that
// `scripts/services.sh start-ensemble DIR; . DIR/ensemble.env` exports.
// Without it the test skips, except in CI where it must run.
func ensembleNodes(t *testing.T) (all string, nodes []string) {
	t.Helper()
	all = os.Getenv("EJ_TEST_ZK_ENSEMBLE")
	for _, k := range []string{"EJ_TEST_ZK_NODE_1", "EJ_TEST_ZK_NODE_2", "EJ_TEST_ZK_NODE_3"} {
		if v := os.Getenv(k); v != "" {
			nodes = append(nodes, v)
		}
	}
	if all == "" || len(nodes) != 3 {
		const how = "run scripts/services.sh start-ensemble DIR and source DIR/ensemble.env"
		if os.Getenv("CI") != "" {
			t.Fatal("EJ_TEST_ZK_ENSEMBLE / EJ_TEST_ZK_NODE_1..3 are not set in CI: " + how)
		}
		t.Skip("EJ_TEST_ZK_ENSEMBLE not set; " + how)
	}
	return all, nodes
}

// TestEnsembleReplicates writes through a client of the whole ensemble and
// reads the value back through a client of each single server: the three
// servers form one quorum. It stops no server (the ensemble is shared).
func TestEnsembleReplicates(t *testing.T) {
	all, nodes := ensembleNodes(t)
	ns := uniqueNamespace(t)
	w := openTest(t, Options{Servers: strings.Split(all, ","), Namespace: ns})
	ctx := t.Context()
	if err := w.Commit(ctx, store.Create("/replicated", []byte("v1"))); err != nil {
		t.Fatalf("write through the ensemble: %v", err)
	}
	for i, addr := range nodes {
		r := openTest(t, Options{Servers: []string{addr}, Namespace: ns})
		// A server may apply a committed write a moment after the leader:
		// poll the real server with a deadline.
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := r.Get(ctx, "/replicated")
			if err == nil {
				if string(n.Value) != "v1" {
					t.Fatalf("server %d (%s) has %q, want v1", i+1, addr, n.Value)
				}
				break
			}
			if !errors.Is(err, store.ErrNotFound) || time.Now().After(deadline) {
				t.Fatalf("server %d (%s): %v", i+1, addr, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

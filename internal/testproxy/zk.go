package testproxy

import (
	"os"
	"testing"
)

// ZK returns EJ_TEST_ZK, the ZooKeeper servers (host:port,…) that `scripts/services.sh
// start DIR; . DIR/env` starts. Without it the test skips, except in CI where it fails.
func ZK(t testing.TB) string {
	t.Helper()
	v := os.Getenv("EJ_TEST_ZK")
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("EJ_TEST_ZK is not set in CI: run scripts/services.sh start DIR and source DIR/env")
		}
		t.Skip("EJ_TEST_ZK not set; run scripts/services.sh start DIR and source DIR/env")
	}
	return v
}

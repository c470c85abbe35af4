package main

import (
	"testing"

	"github.com/ejcloud/elasticjob/config"
)

// TestLaunchCommitBounds: on the embedded registry a full launch round is
// a chain of commits (so the producer's fires wait behind one of them, not
// behind the round: store/sqlite's chains), as on ZooKeeper, where a
// multi's size bounds them.
func TestLaunchCommitBounds(t *testing.T) {
	for _, c := range []struct {
		cfg           config.Config
		round, commit int
	}{
		{config.Config{}, roundTasks, embeddedCommitTasks},
		{config.Config{ZKServers: "127.0.0.1:2181"}, zkRoundTasks, zkCommitTasks},
		{config.Config{Registry: config.RegistryEtcd}, zkRoundTasks, zkCommitTasks},
	} {
		round, commit := maxRoundTasks(c.cfg), maxCommitTasks(c.cfg)
		if round != c.round || commit != c.commit || commit <= 0 || commit >= round {
			t.Errorf("registry %s: rounds of %d tasks in commits of %d; want %d in commits of %d, fewer than a round",
				c.cfg.RegistryKind(), round, commit, c.round, c.commit)
		}
	}
}

//go:build e2e

// Package soak is the fault soak's smokes inside make test: one seed on
// the ZooKeeper cluster shape (its own 3-server ensemble, three
// schedulers, mesos-local's simulated agents) for about two minutes of
// faults, and one on the etcd shape (three schedulers with an etcd member
// each) for about a minute and a half, and one on the clusters shape (one
// scheduler on two clusters) for 40 s, each then the checker over every
// run. The three run side by side: each mostly waits on its clocks and
// its processes (about a third of a core each), and one after the other
// they were make test's longest package. The long runs are make soak
// (cmd/ejsoak).
package soak

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak"
	"github.com/ejcloud/elasticjob/internal/testbin"
)

// smokeSeed is the smoke's seed; a seed that found an anomaly is kept as
// a regression test beside it.
const smokeSeed = 53

func TestSoakSmokeZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak smoke takes about three minutes")
	}
	t.Parallel()
	if _, err := os.Stat("/usr/share/zookeeper"); err != nil && os.Getenv("CI") == "" {
		t.Skip("no ZooKeeper installed (scripts/services.sh install)")
	}
	smoke(t, soak.Config{Shape: "zk", Duration: 2 * time.Minute, Seed: smokeSeed, Jobs: 60, Session: 3 * time.Second,
		Warmup: 15 * time.Second, Tail: 20 * time.Second, MinGap: 5 * time.Second, MaxGap: 20 * time.Second,
		Trigger: time.Second, Change: 3 * time.Second, Heal: 5 * time.Second})
}

// etcdSmokeSeed is the etcd smoke's seed: the one that found a commit
// failing at the raft hand-off that starts each term (store/etcd
// TestCommitsThroughHandOffs).
const etcdSmokeSeed = 7

func TestSoakSmokeEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("the etcd soak smoke takes about two and a half minutes")
	}
	t.Parallel()
	smoke(t, soak.Config{Shape: "etcd", Duration: 90 * time.Second, Seed: etcdSmokeSeed, Jobs: 60,
		Warmup: 15 * time.Second, Tail: 20 * time.Second, MinGap: 4 * time.Second, MaxGap: 8 * time.Second,
		Trigger: time.Second, Change: 3 * time.Second, Heal: 5 * time.Second})
}

// clustersSmokeSeed draws each of the clusters shape's four fault kinds
// within its smoke's 40 s of faults.
const clustersSmokeSeed = 170

// TestSoakSmokeClusters: one scheduler on two clusters (its embedded
// engine running real processes, mesos-local's simulated agents), the
// remote one lost and cut off, either drained, the namespace and jobs
// moved between them while they fire.
func TestSoakSmokeClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("the clusters soak smoke takes about a minute and a half")
	}
	t.Parallel()
	smoke(t, soak.Config{Shape: soak.ShapeClusters, Duration: 40 * time.Second, Seed: clustersSmokeSeed, Jobs: 30,
		Warmup: 10 * time.Second, Tail: 15 * time.Second, MinGap: 3 * time.Second, MaxGap: 6 * time.Second,
		Trigger: time.Second, Change: 2 * time.Second, Heal: 5 * time.Second})
}

// smoke runs c (its Dir, Bin, Services and Log filled in) and fails on
// any anomaly.
func smoke(t *testing.T, c soak.Config) {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("EJ_SOAK_KEEP"); keep != "" { // keep the run (logs, run log, check.json) for ejsoak -recheck
		dir = filepath.Join(keep, c.Shape)
	}
	// The binaries before the run's deadline starts: make build's, else built with none.
	bin, err := testbin.Commands("../..", filepath.Join(dir, "bin"), "scheduler", "executor", "mesos-local")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	services, err := filepath.Abs("../../scripts/services.sh")
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	c.Dir, c.Bin, c.Services = filepath.Join(dir, "run"), bin, services
	c.Log = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := soak.Run(ctx, c)
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, logs.String())
	}
	var out strings.Builder
	res.Report.Print(&out, c.Seed, res.Faults)
	t.Log(out.String())
	if len(res.Faults) == 0 {
		t.Errorf("no fault was injected:\n%s", logs.String())
	}
	if res.Report.Runs == 0 {
		t.Errorf("no run was recorded")
	}
	var failing int
	for _, a := range res.Report.Anomalies {
		if knownOpen[a.Kind] {
			t.Logf("KNOWN OPEN (issue 53, not a pass): %s %s: %s", a.Kind, a.Job, a.Detail)
			continue
		}
		failing++
	}
	if failing > 0 {
		t.Errorf("the checker found anomalies (seed %d):\n%s", c.Seed, out.String())
	}
}

// knownOpen are anomaly kinds the smoke reports without failing, each an
// open product bug with its evidence in an issue, until it is fixed; the
// long soak (make soak) counts them as anomalies. None now.
var knownOpen = map[string]bool{}

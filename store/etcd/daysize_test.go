package etcd_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
	"github.com/ejcloud/elasticjob/task"
)

// TestDayOfRegistrySize measures the store's size after a day of fires:
// EJ_DAY_JOBS jobs (1,000) on minute crons for EJ_DAY_MINUTES (1,440)
// simulated minutes, each fire written as the leader writes it through
// the registry (the producer's fire commit, the launch's dequeue and
// running entry, the RUNNING mark, the end with the job's run state), on
// one embedded member. Time is simulated: etcd's own periodic compaction
// (1 h retention) runs on the wall clock, so it is done here as it would
// be, every 6 simulated minutes to the revision of an hour before, and
// the scheduler's maintenance pass (defaults: defragment past 64 MiB and
// half free) every simulated hour. The replicated history log is measured
// by history/replog's TestDayOfHistorySize.
//
//	EJ_DAY=1 go test -run TestDayOfRegistrySize -v -timeout 60m ./store/etcd/
func TestDayOfRegistrySize(t *testing.T) {
	if testing.Short() || os.Getenv("EJ_DAY") != "1" {
		t.Skip("a measurement: EJ_DAY=1 go test -run TestDayOfRegistrySize -v ./store/etcd/")
	}
	nJobs, minutes := envInt("EJ_DAY_JOBS", 1000), envInt("EJ_DAY_MINUTES", 1440)
	c := etcdtest.Start(t, 1)
	cli := c.Client()
	ctx := context.Background()
	st, err := etcd.Open(ctx, etcd.Options{Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st)
	admin := etcd.NewAdmin(st)
	maint := &etcd.Maintenance{Admin: admin}
	names := make([]string, nJobs)
	misfire := map[string]bool{}
	for i := range names {
		names[i] = fmt.Sprintf("report-%04d", i)
		misfire[names[i]] = false
	}
	all := func(string) bool { return true }
	revAt := map[int]int64{} // simulated minute → revision then
	var peak, peakInUse int64
	var compactions, defrags int
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	start := time.Now()
	for m := 0; m < minutes; m++ {
		at := t0.Add(time.Duration(m) * time.Minute)
		if err := reg.Work().TriggerMany(ctx, misfire, at, at, all); err != nil {
			t.Fatalf("minute %d: fire: %v", m, err)
		}
		ready, err := reg.Work().ReadyQueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		launch, running := reg.Change(), make([]task.Entry, 0, len(ready))
		now := at.Add(20 * time.Millisecond)
		for _, rd := range ready {
			id := jobs.FireTaskID(rd.Job, 0, jobs.KindReady, "ready|"+strconv.FormatInt(rd.Since.UnixNano(), 10), rd.Since)
			e := task.Entry{TaskID: id.String(), AgentID: "agent-" + strconv.Itoa(len(running)%20), Hostname: "host-" + strconv.Itoa(len(running)%20),
				ExecutorID: jobs.ExecutorID("app", "agent-"+strconv.Itoa(len(running)%20)), State: task.Staging, Source: string(jobs.SourceNormal),
				Trigger: registry.ByCron, LaunchedAt: now, UpdatedAt: now}
			launch.Dequeue(rd, now).Launch(rd.Job, 0, e)
			running = append(running, e)
		}
		if len(ready) != nJobs {
			t.Fatalf("minute %d: %d ready entries, want %d", m, len(ready), nJobs)
		}
		if err := launch.Commit(ctx); err != nil {
			t.Fatalf("minute %d: launch: %v", m, err)
		}
		mark := reg.Change()
		for i := range running {
			running[i].State, running[i].UpdatedAt = task.Running, now.Add(time.Second)
			mark.Mark(ready[i].Job, 0, running[i])
		}
		if err := mark.Commit(ctx); err != nil {
			t.Fatalf("minute %d: mark: %v", m, err)
		}
		end := reg.Change()
		for i := range running {
			end.CountRun(ready[i].Job, task.RunState{Succeeded: true}).End(ready[i].Job, 0, 1)
		}
		if err := end.Commit(ctx); err != nil {
			t.Fatalf("minute %d: end: %v", m, err)
		}
		resp, err := cli.Get(ctx, "x", clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		revAt[m+1] = resp.Header.Revision
		if (m+1)%6 == 0 && m+1 >= 60 { // etcd's periodic compaction, 1 h retention
			if _, err := cli.Compact(ctx, revAt[m+1-60]); err != nil {
				t.Fatal(err)
			}
			compactions++
		}
		if (m+1)%60 == 0 {
			sts, _ := admin.Statuses(ctx)
			if len(sts) > 0 {
				peak, peakInUse = max(peak, sts[0].DBSize), max(peakInUse, sts[0].DBInUse)
				t.Logf("hour %2d: %.1f MiB (in use %.1f MiB), revision %d, %v", (m+1)/60, mib(sts[0].DBSize), mib(sts[0].DBInUse), revAt[m+1], time.Since(start).Round(time.Second))
			}
			res, err := maint.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defrags += len(res.Defragmented)
		}
	}
	elapsed := time.Since(start)
	sts, err := admin.Statuses(ctx)
	if err != nil || len(sts) == 0 {
		t.Fatal(sts, err)
	}
	peak, peakInUse = max(peak, sts[0].DBSize), max(peakInUse, sts[0].DBInUse)
	t.Logf("%d jobs × %d minutes = %d fires (%d revisions) in %v; compactions %d, defragmentations %d", nJobs, minutes, nJobs*minutes, revAt[minutes], elapsed.Round(time.Second), compactions, defrags)
	t.Logf("at the end: %.1f MiB (in use %.1f MiB); peak %.1f MiB (in use %.1f MiB)", mib(sts[0].DBSize), mib(sts[0].DBInUse), mib(peak), mib(peakInUse))
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

package scheduler

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
)

// TestLaunchCarriesTheNominalInstantAfterAStall: after a producer stall
// (a paused leader, a commit the store held), each execution keeps the
// cron instant it serves in its ready entry, and its launch passes it in
// the task's payload (TaskData.Nominal), though its fire was queued late:
// a misfire=true job's replays carry each missed instant, a
// misfire=false job's one execution the instant it fired for (the fault
// soak's checker applies the stall rule by them).
func TestLaunchCarriesTheNominalInstantAfterAStall(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) {
		j.JobName = "m"
		j.Cron = "0/5 * * * * ?"
		j.Misfire = true
		j.ShardingTotalCount = 1
	})
	r.addJob(func(j *jobs.Config) { j.JobName = "c"; j.Cron = "0/5 * * * * ?"; j.ShardingTotalCount = 1 })
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(5*time.Second))
	r.clk.Advance(time.Minute) // stalled for 12 periods
	for range 12 {
		nextFire(t, fired)
	}
	armedAt(t, r, t0.Add(65*time.Second))
	var want []time.Time
	for i := 1; i <= 12; i++ {
		want = append(want, t0.Add(time.Duration(i)*5*time.Second))
	}
	if got := r.readyOf("m").NominalInstants(); !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("misfire=true: instants %v, want one per missed instant %v", got, want)
	}
	if got := r.readyOf("c"); got.Count != 1 || !got.FirstNominal().Equal(t0.Add(5*time.Second)) || !got.Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("misfire=false: %+v, want one execution queued at 60 s serving 5 s", got)
	}

	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	got := r.launchedData()
	if len(got) != 2 {
		t.Fatalf("launched %v, want m and c", got)
	}
	for _, job := range []string{"m", "c"} {
		if d := got[job]; !d.Nominal.Equal(t0.Add(5*time.Second)) || !d.Queued.Equal(t0.Add(time.Minute)) {
			t.Errorf("%s: nominal %v queued %v, want 5 s and 60 s", job, d.Nominal, d.Queued)
		}
	}
	if n := r.readyOf("m").FirstNominal(); !n.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("m's next execution serves %v, want 10 s", n)
	}
}

// A launch rolled back (its ACCEPT failed) goes back with the instant it
// served, ahead of the executions queued since, which keep theirs.
func TestRolledBackLaunchKeepsItsNominalInstant(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) {
		j.JobName = "m"
		j.Cron = "0/5 * * * * ?"
		j.Misfire = true
		j.ShardingTotalCount = 1
	})
	fired := runProducer(t, r)
	armedAt(t, r, t0.Add(5*time.Second))
	r.clk.Advance(10 * time.Second)
	nextFire(t, fired)
	nextFire(t, fired)
	r.drv.acceptErr = errors.New("master gone")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	rd := r.readyOf("m")
	if got := rd.NominalInstants(); rd.Count != 2 || len(got) != 2 || !got[0].Equal(t0.Add(5*time.Second)) || !got[1].Equal(t0.Add(10*time.Second)) {
		t.Fatalf("after the rollback: %+v, want the executions of 5 s and 10 s", rd)
	}
	r.drv.acceptErr = nil
	r.offer("o2", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if d := r.launchedData()["m"]; !d.Nominal.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("relaunched serving %v, want 5 s", d.Nominal)
	}
}

// A takeover's catch-up queues its executions with the instants missed:
// one per instant for a misfire=true job, the first for a misfire=false
// job's one execution.
func TestCatchUpRecordsTheMissedInstants(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.JobName = "collapse"; j.Cron = "* * * * * ?" })
	r.addJob(func(j *jobs.Config) { j.JobName = "grow"; j.Cron = "* * * * * ?"; j.Misfire = true })
	// the last leader committed the fires of t0-5s; this one starts at t0+0.5s
	if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{}, t0.Add(-5*time.Second), t0.Add(-5*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	r.clk.Set(t0.Add(500 * time.Millisecond))
	fired := runProducer(t, r)
	nextFire(t, fired)
	var want []time.Time
	for s := -4; s <= 0; s++ {
		want = append(want, t0.Add(time.Duration(s)*time.Second))
	}
	if got := r.readyOf("grow").NominalInstants(); !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("misfire=true: instants %v, want %v", got, want)
	}
	if got := r.readyOf("collapse"); got.Count != 1 || !got.FirstNominal().Equal(want[0]) {
		t.Errorf("misfire=false: %+v, want one execution serving %v", got, want[0])
	}
}

// A failover of a run keeps the instant the run served: in the running
// entry, the failover entry and the relaunch's payload.
func TestFailoverCarriesTheNominalInstant(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.Failover = true; j.ShardingTotalCount = 1; j.Cron = "0/5 * * * * ?" })
	instant := t0.Add(-3 * time.Second) // committed 3 s late
	if _, err := r.reg.Work().TriggerFires(r.ctx, map[string]registry.CronFire{"job": {At: t0, Instant: instant}}, instant, nil); err != nil {
		t.Fatal(err)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	run := r.running("job")
	if !run[0].Nominal.Equal(instant) {
		t.Fatalf("running entry serves %v, want %v", run[0].Nominal, instant)
	}
	r.status(run[0].TaskID, "TASK_RUNNING")
	r.status(run[0].TaskID, "TASK_FAILED")
	fo, err := r.reg.Work().FailoverQueue(r.ctx)
	if err != nil || len(fo) != 1 || !fo[0].Nominal.Equal(instant) {
		t.Fatalf("failover %+v %v, want it serving %v", fo, err, instant)
	}
	r.offer("o2", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if d := r.launchedData()["job"]; d.ExecutionSource != jobs.SourceFailover || !d.Nominal.Equal(instant) {
		t.Errorf("relaunch %s serving %v, want FAILOVER serving %v", d.ExecutionSource, d.Nominal, instant)
	}
}

// readyOf is job's ready entry (zero: none).
func (r *rig) readyOf(job string) queue.Ready {
	r.t.Helper()
	q, err := r.reg.Work().ReadyQueue(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rd := range q {
		if rd.Job == job {
			return rd
		}
	}
	return queue.Ready{}
}

// launchedData is each launched job's last task payload.
func (r *rig) launchedData() map[string]jobs.TaskData {
	r.drv.mu.Lock()
	defer r.drv.mu.Unlock()
	out := map[string]jobs.TaskData{}
	for _, a := range r.drv.accepts {
		for _, l := range a.launches {
			job, _, _ := strings.Cut(l.TaskID, "@-@")
			out[job] = l.Task
		}
	}
	return out
}

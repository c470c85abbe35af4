package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// slowClusterDriver is a fakeDriver of two clusters (engine.Lanes), "mesos" and "k8s",
// whose k8s ACCEPTs are held until the test answers them (answer: the ACCEPT's result).
type slowClusterDriver struct {
	*fakeDriver
	entered chan struct{} // a k8s ACCEPT is in flight
	answer  chan error    // its result
}

func (d *slowClusterDriver) Lane(agentID string) (string, int) {
	cluster, _ := engine.SplitID(agentID)
	return cluster, 4
}

func (d *slowClusterDriver) Accept(ctx context.Context, ids []string, l []engine.TaskLaunch, refuse time.Duration) error {
	if cluster, _ := engine.SplitID(l[0].AgentID); cluster == "k8s" {
		d.entered <- struct{}{}
		select {
		case err := <-d.answer:
			if err != nil {
				d.mu.Lock()
				d.tried = append(d.tried, acceptCall{offers: ids, launches: l})
				d.mu.Unlock()
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return d.fakeDriver.Accept(ctx, ids, l, refuse)
}

// launchLog records the observers' launch and status events in their order.
type launchLog struct {
	nopTasks
	mu     sync.Mutex
	events []string
}

func (o *launchLog) Launched(ev observe.TaskEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "launched "+ev.Job)
}

func (o *launchLog) StatusChanged(ev observe.TaskEvent, st engine.Status) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, string(st.State)+" "+ev.Job)
}

// slowClusterRig is a rig of clusters mesos and k8s whose k8s ACCEPTs wait for the test,
// with jobs pinned to each (onk8s, onk8s2; onmesos, onmesos2) and an offer on each.
func slowClusterRig(t *testing.T) (*rig, *slowClusterDriver, *launchLog) {
	r := newRig(t)
	d := &slowClusterDriver{fakeDriver: r.drv, entered: make(chan struct{}, 8), answer: make(chan error, 8)}
	obs := &launchLog{}
	r.rebuild(func(dp *Deps) {
		dp.Driver, dp.Clusters, dp.Tasks = Guard(d, func() error { return nil }), clusterList{{Name: "mesos"}, {Name: "k8s"}}, obs
	})
	r.addApp("app", 0.1, 32)
	for _, j := range []struct{ name, cluster string }{{"onk8s", "k8s"}, {"onk8s2", "k8s"}, {"onmesos", "mesos"}, {"onmesos2", "mesos"}} {
		r.addJob(func(c *jobs.Config) { c.JobName, c.ShardingTotalCount, c.Clusters = j.name, 1, []string{j.cluster} })
	}
	r.offerOn("mesos", "o1", 8, 4096)
	r.offerOn("k8s", "o1", 8, 4096)
	return r, d, obs
}

// boundedRound runs a launch round, failing the test when it does not return: a round
// that waits for the k8s ACCEPT the test holds would not. Then it handles the answers of
// the mesos ACCEPTs it sent (mesos: whether it sent any), as the loop does.
func boundedRound(t *testing.T, r *rig, mesos bool) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.sched.launcher.round(r.ctx) // the term's context: the ACCEPTs sent off the loop outlive the round
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a bound, never reached when the round does not wait
		t.Fatal("the round waited for the slow cluster's ACCEPT")
	}
	if mesos {
		handlePosted(t, r)
	}
}

// handlePosted handles one answer posted to the loop (acceptLater), as the loop does.
func handlePosted(t *testing.T, r *rig) {
	t.Helper()
	select {
	case f := <-r.sched.events:
		f(r.ctx)
	case <-time.After(30 * time.Second): // a bound, never reached: the answer is posted at once
		t.Fatal("an ACCEPT's answer was not handed to the loop")
	}
}

// answerK8s answers the k8s ACCEPT in flight with err and handles its result on the
// loop.
func answerK8s(t *testing.T, r *rig, d *slowClusterDriver, err error) {
	t.Helper()
	d.answer <- err
	handlePosted(t, r)
	r.sched.launcher.flights.Wait()
}

// launchOnK8s launches onk8s with its ACCEPT held in flight, returning its task id.
func launchOnK8s(t *testing.T, r *rig, d *slowClusterDriver) string {
	t.Helper()
	r.trigger("onk8s")
	boundedRound(t, r, false)
	<-d.entered
	for _, e := range r.running("onk8s") {
		return e.TaskID
	}
	t.Fatal("the launch in flight is not recorded")
	return ""
}

// killed are the tasks the driver was asked to kill.
func (d *fakeDriver) killed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.kills)
}

func acceptedJobs(d *fakeDriver) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, a := range d.accepts {
		for _, l := range a.launches {
			out = append(out, l.Task.ShardingContext.JobName)
		}
	}
	slices.Sort(out)
	return out
}

// TestSlowClusterAcceptHoldsNotTheOthersRounds: while a cluster's ACCEPT is in flight, the
// round does not wait for it and the other cluster's next round launches; the busy
// cluster takes nothing (its other offer held, neither placed on nor declined; a job
// pinned to it waits, saying why), its launch in flight stays recorded; its answer,
// handled on the loop when it comes, tells the launch and frees the cluster for the
// next round.
func TestSlowClusterAcceptHoldsNotTheOthersRounds(t *testing.T) {
	r, d, obs := slowClusterRig(t)
	r.trigger("onk8s")
	r.trigger("onmesos")
	boundedRound(t, r, true)
	<-d.entered
	if got := acceptedJobs(r.drv); !slices.Equal(got, []string{"onmesos"}) {
		t.Fatalf("launched %v, want onmesos while k8s's ACCEPT is in flight", got)
	}
	if len(r.running("onk8s")) != 1 {
		t.Fatalf("the launch in flight is not recorded: %v", r.running("onk8s"))
	}

	// The next round: mesos launches again; k8s, busy, takes nothing, though it offers.
	r.offerOn("mesos", "o2", 8, 4096)
	r.offerOn("k8s", "o2", 8, 4096)
	r.trigger("onmesos2")
	r.trigger("onk8s2")
	r.trigger("onk8s") // a second execution of a job in flight: it must not go beside it
	if r.sched.launcher.waitsForLanes() {
		t.Fatal("rounds wait though mesos offers and is not busy")
	}
	boundedRound(t, r, true)
	if got := acceptedJobs(r.drv); !slices.Equal(got, []string{"onmesos", "onmesos2"}) {
		t.Fatalf("launched %v, want onmesos, onmesos2; waits %+v", got, r.sched.launcher.scratch)
	}
	if _, ok := r.sched.st.offers[engine.QualifyID("k8s", "o2")]; !ok {
		t.Fatal("the busy cluster's offer was not kept")
	}
	for _, dc := range r.drv.declines {
		if slices.Contains(dc.offers, engine.QualifyID("k8s", "o2")) {
			t.Fatal("the busy cluster's offer was declined")
		}
	}
	if w := r.sched.launcher.scratch[queue.WaitKey(false, "onk8s2", 0)]; w.Reason != queue.WaitBehind {
		t.Fatalf("onk8s2 waits %+v, want behind_older_work (k8s busy)", w)
	}
	if !r.sched.launcher.waitsForLanes() {
		t.Fatal("with every offer held on the busy cluster, rounds do not wait for its answer")
	}

	answerK8s(t, r, d, nil)
	if len(r.sched.launcher.busy) != 0 || len(r.sched.st.accepting) != 0 {
		t.Fatalf("after the answer: busy %v, in flight %v", r.sched.launcher.busy, r.sched.st.accepting)
	}
	if !slices.Contains(obs.events, "launched onk8s") {
		t.Fatalf("the late answer's launch was not told: %v", obs.events)
	}
	boundedRound(t, r, false)
	<-d.entered
	answerK8s(t, r, d, nil)
	if got := acceptedJobs(r.drv); !slices.Equal(got, []string{"onk8s", "onk8s2", "onmesos", "onmesos2"}) {
		t.Fatalf("launched %v", got)
	}
	if got := r.readyCount("onk8s"); got != 1 {
		t.Fatalf("onk8s's second execution: %d queued, want 1 (it waits for the first to end)", got)
	}
}

// TestRefusedLateAcceptRollsBack: a slow cluster's ACCEPT refused after the other
// cluster's next round is rolled back when its answer comes (the execution queued again,
// its running entry gone), its entry says why at the next round, and it launches again.
func TestRefusedLateAcceptRollsBack(t *testing.T) {
	r, d, _ := slowClusterRig(t)
	r.trigger("onk8s")
	r.trigger("onmesos")
	boundedRound(t, r, true)
	<-d.entered
	r.offerOn("mesos", "o2", 8, 4096)
	r.trigger("onmesos2")
	boundedRound(t, r, true)

	answerK8s(t, r, d, errors.New("admission webhook denied the request"))
	if len(r.running("onk8s")) != 0 || r.readyCount("onk8s") != 1 {
		t.Fatalf("after the refusal: running %v, queued %d; want none running, 1 queued", r.running("onk8s"), r.readyCount("onk8s"))
	}
	if len(r.sched.launcher.busy) != 0 || len(r.sched.st.accepting) != 0 {
		t.Fatalf("after the answer: busy %v, in flight %v", r.sched.launcher.busy, r.sched.st.accepting)
	}
	// The refused offer is gone (the engine's answer said nothing of it): a new one comes.
	r.offerOn("k8s", "o3", 8, 4096)
	key := queue.WaitKey(false, "onk8s", 0)
	if w := r.sched.launcher.lateWaits[key]; w.Reason != queue.WaitLaunchFailed {
		t.Fatalf("the rolled-back entry's reason %+v, want launch_failed", w)
	}
	boundedRound(t, r, false)
	<-d.entered
	answerK8s(t, r, d, nil)
	if len(r.running("onk8s")) != 1 || r.readyCount("onk8s") != 0 {
		t.Fatalf("relaunched: running %v, queued %d", r.running("onk8s"), r.readyCount("onk8s"))
	}
	if got := acceptedJobs(r.drv); !slices.Equal(got, []string{"onk8s", "onmesos", "onmesos2"}) {
		t.Fatalf("launched %v", got)
	}
}

// TestLateAcceptOfUnknownOutcomeLeftToReconciliation: a slow cluster's ACCEPT whose
// answer was lost keeps its task STAGING for reconciliation, due at once; while it was in
// flight, reconciliation did not ask for it (an engine not reached yet would have
// answered it unknown, and it would have run twice), nor held its job for an answer.
func TestLateAcceptOfUnknownOutcomeLeftToReconciliation(t *testing.T) {
	r, d, _ := slowClusterRig(t)
	r.trigger("onk8s")
	r.trigger("onmesos")
	boundedRound(t, r, true)
	<-d.entered
	inFlight := ""
	for _, e := range r.running("onk8s") {
		inFlight = e.TaskID
	}
	if err := r.sched.recon.reconcile(r.ctx, true); err != nil {
		t.Fatal(err)
	}
	r.sched.recon.begin(r.ctx)
	if r.sched.st.awaiting[inFlight] {
		t.Fatal("a subscription's reconciliation waits for the task in flight")
	}
	for _, refs := range r.drv.reconciles {
		for _, ref := range refs {
			if ref.TaskID == inFlight {
				t.Fatalf("reconciliation asked for the task in flight %s", inFlight)
			}
		}
	}
	r.sched.st.reconciledAt = r.clk.Now()
	answerK8s(t, r, d, engine.ErrOutcomeUnknown)
	e, ok := r.running("onk8s")[0]
	if !ok || e.State != task.Staging || !r.sched.st.reconciledAt.IsZero() {
		t.Fatalf("after an unknown outcome: entry %+v (%v), reconciliation due %v", e, ok, r.sched.st.reconciledAt)
	}
	if err := r.sched.recon.reconcile(r.ctx, true); err != nil {
		t.Fatal(err)
	}
	last := r.drv.reconciles[len(r.drv.reconciles)-1]
	if !slices.ContainsFunc(last, func(ref engine.TaskRef) bool { return ref.TaskID == inFlight }) {
		t.Fatalf("once answered, reconciliation does not ask for %s: %v", inFlight, last)
	}
}

// TestUpdateBeforeTheLateAnswerTellsTheLaunchFirst: an update of a task whose ACCEPT is
// still in flight (the engine created it before answering) tells the observers of its
// launch before its update, and the answer does not tell it again.
func TestUpdateBeforeTheLateAnswerTellsTheLaunchFirst(t *testing.T) {
	r, d, obs := slowClusterRig(t)
	id := launchOnK8s(t, r, d)
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: id, AgentID: r.running("onk8s")[0].AgentID, State: task.Running}); err != nil {
		t.Fatal(err)
	}
	answerK8s(t, r, d, nil)
	if want := []string{"launched onk8s", "TASK_RUNNING onk8s"}; !slices.Equal(obs.events, want) {
		t.Fatalf("observed %v, want %v", obs.events, want)
	}
}

// TestRefusedLateAcceptKeepsTheTasksTheEngineReported: a slow cluster's ACCEPT that fails
// after the engine reported one of its tasks (a Kubernetes ACCEPT fails when one of its
// pods is refused; those created are the engine's) rolls back only the others: the
// reported task stays recorded, its execution is not queued again beside it.
func TestRefusedLateAcceptKeepsTheTasksTheEngineReported(t *testing.T) {
	r, d, _ := slowClusterRig(t)
	r.addJob(func(c *jobs.Config) { c.JobName, c.ShardingTotalCount, c.Clusters = "two", 2, []string{"k8s"} })
	r.trigger("two")
	boundedRound(t, r, false)
	<-d.entered
	var first string
	for item, e := range r.running("two") {
		if item == 0 {
			first = e.TaskID
			if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: e.TaskID, AgentID: e.AgentID, State: task.Running}); err != nil {
				t.Fatal(err)
			}
		}
	}
	answerK8s(t, r, d, errors.New("pods \"two-1\" is forbidden: exceeded quota"))
	got := r.running("two")
	if e, ok := got[0]; !ok || e.TaskID != first || e.State != task.Running {
		t.Fatalf("the reported task's entry %+v (%v), want %s running", e, ok, first)
	}
	if _, ok := got[1]; ok {
		t.Fatalf("the unreported task was not rolled back: %v", got)
	}
}

// TestKillDuringALateAcceptWaitsForItsAnswer: a run stopped while its ACCEPT is in flight
// is killed only once the ACCEPT is answered: a kill sent first could reach the engine
// before the launch, which would then run on.
func TestKillDuringALateAcceptWaitsForItsAnswer(t *testing.T) {
	r, d, _ := slowClusterRig(t)
	inFlight := launchOnK8s(t, r, d)
	if _, err := r.sched.killRun(r.ctx, "onk8s", "alice"); err != nil {
		t.Fatal(err)
	}
	if kills := r.drv.killed(); len(kills) != 0 {
		t.Fatalf("killed %v while the launch was on its way", kills)
	}
	answerK8s(t, r, d, nil)
	if kills := r.drv.killed(); !slices.Equal(kills, []string{inFlight}) {
		t.Fatalf("after the answer killed %v, want %s", kills, inFlight)
	}
}

// TestKillDuringARefusedLateAcceptEndsTheRun: a run stopped while its ACCEPT is in flight,
// whose ACCEPT is then refused, is not queued again (it would run after it was stopped):
// it ends as killed, by whom stopped it, and nothing is sent to the engine.
func TestKillDuringARefusedLateAcceptEndsTheRun(t *testing.T) {
	r, d, obs := slowClusterRig(t)
	launchOnK8s(t, r, d)
	if _, err := r.sched.killRun(r.ctx, "onk8s", "alice"); err != nil {
		t.Fatal(err)
	}
	answerK8s(t, r, d, errors.New("admission webhook denied the request"))
	if len(r.running("onk8s")) != 0 || r.readyCount("onk8s") != 0 {
		t.Fatalf("after the refusal: running %v, queued %d; want neither", r.running("onk8s"), r.readyCount("onk8s"))
	}
	if kills := r.drv.killed(); len(kills) != 0 {
		t.Fatalf("killed %v, a task the engine never had", kills)
	}
	if !slices.Contains(obs.events, "TASK_KILLED onk8s") {
		t.Fatalf("the stopped run's end was not told: %v", obs.events)
	}
	if len(r.sched.st.accepting) != 0 {
		t.Fatalf("in flight after the answer: %v", r.sched.st.accepting)
	}
}

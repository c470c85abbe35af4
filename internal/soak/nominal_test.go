package soak

import (
	"strings"
	"testing"
	"time"
)

// A FAILOVER relaunch that carries the instant its run served stands for
// that fire only: the relaunch of fire 4's launch that never started
// stands for 4; a failover of fire 2's run, which had started, does not
// stand for fire 6, which never ran.
func TestCheckFailoverStandsForTheInstantItServes(t *testing.T) {
	base := []runSpec{{task: "a", job: "j", queued: 2, start: 2.01, dur: 0.2, nominal: 2},
		{task: "b2", job: "j", queued: 5, start: 5.5, dur: 0.2, source: "FAILOVER", nominal: 4},
		{task: "d", job: "j", queued: 8, start: 8.01, nominal: 8}}
	for _, misfire := range []bool{false, true} {
		in := Input{Runs: logOf(append(base, runSpec{task: "c", job: "j", queued: 6, start: 6.01, nominal: 6})...), Jobs: []Job{every2("j", misfire)}}
		if rep := Check(in); len(rep.Anomalies) != 0 {
			t.Errorf("misfire=%v: fire 4 relaunched: %v", misfire, rep.Anomalies)
		}
		in.Runs = logOf(append(base, runSpec{task: "a2", job: "j", queued: 6.3, start: 6.5, dur: 0.2, source: "FAILOVER", nominal: 2})...)
		if rep := Check(in); rep.ByKind()[LostFire] != 1 {
			t.Errorf("misfire=%v: fire 6 never ran, a failover of fire 2 beside it: %v", misfire, rep.Anomalies)
		}
		for i := range in.Runs {
			in.Runs[i].Nominal = time.Time{}
		}
		if rep := Check(in); rep.ByKind()[LostFire] != 0 {
			t.Errorf("misfire=%v: without the instants the failover passes for fire 6's: %v", misfire, rep.Anomalies)
		}
	}
}

// A misfire=true job with a backlog had its fire
// staged into the pending entry with no hold of its own, and the
// execution serving 8 started at 7.4, before its instant.
func TestCheckExecutionStartedBeforeItsInstant(t *testing.T) {
	runs := []runSpec{{task: "a", job: "j", queued: 2, start: 2.01, nominal: 2}, {task: "b", job: "j", queued: 4, start: 4.01, nominal: 4},
		{task: "c", job: "j", queued: 5.2, start: 6, source: "MISFIRE", nominal: 6}, {task: "d", job: "j", queued: 7, start: 7.4, source: "MISFIRE", nominal: 8}}
	rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{every2("j", true)}, End: at(9)})
	if rep.ByKind()[EarlyRun] != 1 || len(rep.Anomalies) != 1 {
		t.Errorf("the execution serving 8 started at 7.4: %v", rep.Anomalies)
	}
	runs[3].start = 8.005
	if rep := Check(Input{Runs: logOf(runs...), Jobs: []Job{every2("j", true)}, End: at(9)}); len(rep.Anomalies) != 0 {
		t.Errorf("started at its instant: %v", rep.Anomalies)
	}
}

// A misfire=false job every 6 s, its fire of 18 launched 0.8 s before a quorum loss (18.8–29.7) and
// an API trigger of it sent at 19.1, during the loss. The trigger was queued when the leader took a
// retry of it at 25.5 and committed at the heal: its run, the one run after the heal, serves no
// cron instant (a trigger serves none) and is matched by its key. The fires of 24 (during the loss)
// and 30 collapse into it, pending then. The fire of 18, whose launch the fence refused and whose
// rollback left its execution nowhere, is the one lost; re-queued by the rollback serving its
// instant (one commit with the launch's undoing), it runs after the heal and nothing is lost.
func TestCheckTriggerQueuedDuringAQuorumLossServesNoInstant(t *testing.T) {
	job := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(50), Cron: "*/6 * * * * ?"}},
		Keys: []string{"k36-j"}, Sent: map[string]time.Time{"k36-j": at(19.1)}}
	before := []runSpec{{task: "a", job: "j", queued: 6, start: 6.02, nominal: 6, term: 1113}, {task: "b", job: "j", queued: 12, start: 12.02, nominal: 12, term: 1113}}
	after := []runSpec{{task: "t", job: "j", queued: 25.5, start: 30.2, param: "soak 0 k36-j", term: 1114},
		{task: "d", job: "j", queued: 36, start: 36.02, nominal: 36, term: 1114}, {task: "e", job: "j", queued: 42, start: 42.02, nominal: 42, term: 1114},
		{task: "f", job: "j", queued: 48, start: 48.02, nominal: 48, term: 1114}}
	in := Input{Jobs: []Job{job}, Faults: []Fault{{Kind: "etcd-quorum-lost", Start: at(18.8), End: at(29.7)}}, End: at(50), StoreHold: EtcdCommitHold}
	in.Runs = logOf(append(before, after...)...)
	rep := Check(in)
	if len(rep.Anomalies) != 1 || rep.Anomalies[0].Kind != LostFire || !strings.Contains(rep.Anomalies[0].Detail, "fire 00:00:18 ") {
		t.Fatalf("the fire of 18 lost by the rollback, the trigger's run read as the trigger's: %v", rep.Anomalies)
	}
	in.Runs = logOf(append(append(before, runSpec{task: "c", job: "j", queued: 18, start: 30.1, dur: 0.05, nominal: 18, term: 1114}), after...)...)
	if rep := Check(in); len(rep.Anomalies) != 0 {
		t.Errorf("the fire of 18 re-queued by its rollback serving its instant: %v", rep.Anomalies)
	}
}

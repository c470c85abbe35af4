package soak

import (
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

package soak

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// notRunID is the task id of job j's shard 0 whose execution was queued
// at s seconds.
func notRunID(j string, s float64) string {
	return jobs.FireTaskID(j, 0, jobs.KindReady, "x", at(s)).String()
}

// History rows name a task lost with its agent before it started and not
// run again by its failure cause, as the product words it.
func TestHistoryRowLostBeforeItStarted(t *testing.T) {
	done := at(40)
	cause := func(s string) *string { return &s }
	notRun := task.LostBeforeStartWords + " (unreachable for longer than 20s); " + task.NotRunAgainWords
	cases := []struct {
		name string
		row  historyRow
		want bool
	}{
		{"not run again", historyRow{CompleteTime: &done, FailureCause: cause(notRun), TriggeredBy: "cron"}, true},
		{"run again by failover", historyRow{CompleteTime: &done, FailureCause: cause(task.LostBeforeStartWords + " (TASK_GONE)")}, false},
		{"another failure", historyRow{CompleteTime: &done, FailureCause: cause("unreachable for longer than 20s")}, false},
		{"open", historyRow{FailureCause: cause(notRun)}, false},
	}
	for _, c := range cases {
		o := c.row.outcome()
		if got := !o.NotRun.IsZero(); got != c.want || (c.want && (!o.NotRun.Equal(done) || o.Trigger != c.row.TriggeredBy)) {
			t.Errorf("%s: %+v", c.name, o)
		}
	}
}

// Real Mesos: a fire's task launched just before its
// agent was lost never started; counted lost 31 s later, it was not run
// again (failover off): its fire is accounted for by that recorded
// reason, and the misfire=false fires while the registry held it running
// collapsed into it. Without the row, or with the row of another job, they
// are lost.
func TestCheckFireLostBeforeItStartedIsAccounted(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(60), Cron: "*/2 * * * * ?"}}}
	runs := []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01}}
	for i, f := range []float64{36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58} {
		runs = append(runs, runSpec{task: "jr" + string(rune('a'+i)), job: "j", queued: f, start: f + 0.01})
	}
	hist := map[string][]Outcome{notRunID("j", 4): {{NotRun: at(35), Trigger: "cron"}}}
	in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(70), Replicas: map[string]map[string][]Outcome{"s1": hist},
		Faults: []Fault{{Kind: AgentLost, Start: at(4.1), End: at(12)}}}
	if rep := Check(in); rep.ByKind()[LostFire]+rep.ByKind()[ExtraRun] != 0 {
		t.Errorf("the fire of 4 s lost before it started, 6-34 s collapsed into it: %v", rep.Anomalies)
	}
	in.Replicas = nil
	if got := Check(in).ByKind()[LostFire]; got != 16 {
		t.Errorf("without the row: %d lost-fire, want 16 (4-34 s)", got)
	}
	in.Replicas = map[string]map[string][]Outcome{"s1": {notRunID("k", 4): {{NotRun: at(35), Trigger: "cron"}}}}
	if got := Check(in).ByKind()[LostFire]; got != 16 {
		t.Errorf("another job's row: %d lost-fire, want 16", got)
	}

	// misfire=true: the fire is accounted for once; the others ran.
	j.Misfire = true
	runs = []runSpec{{task: "ja", job: "j", queued: 2, start: 2.01}, {task: "jc", job: "j", queued: 6, start: 6.01}, {task: "jd", job: "j", queued: 8, start: 8.01}}
	j.Windows[0].To = at(10)
	in = Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(10), History: hist}
	if rep := Check(in); rep.ByKind()[LostFire]+rep.ByKind()[ExtraRun] != 0 {
		t.Errorf("misfire=true: %v", rep.Anomalies)
	}
	in.History = nil
	if got := Check(in).ByKind()[LostFire]; got != 1 {
		t.Errorf("misfire=true without the row: %d lost-fire, want 1", got)
	}
}

// An accepted trigger whose task was lost before it
// started and not run again.
func TestCheckTriggerLostBeforeItStartedIsAccounted(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Keys: []string{"k1"}, Sent: map[string]time.Time{"k1": at(5)}}
	row := func(q float64, by string) map[string][]Outcome {
		return map[string][]Outcome{notRunID("j", q): {{NotRun: at(q + 30), Trigger: by}}}
	}
	for _, c := range []struct {
		name string
		hist map[string][]Outcome
		want int
	}{
		{"its row", row(5.3, "api:soak"), 0},
		{"no row", nil, 1},
		{"a cron fire's row", row(5.3, "cron"), 1},
		{"a row queued long after it was sent", row(70, "api:soak"), 1},
	} {
		if got := Check(Input{Jobs: []Job{j}, History: c.hist}).ByKind()[LostTrigger]; got != c.want {
			t.Errorf("%s: %d lost-trigger, want %d", c.name, got, c.want)
		}
	}
}

// Real Mesos: misfire=false runs ended 2.5 s after packet
// loss on the leader's peer links healed; their ends' commits waited
// behind the stalled link, and the next fire collapsed into them. Within
// maxLossStall after the heal only.
func TestCheckFireCollapsesIntoARunWhoseEndCommittedLate(t *testing.T) {
	j := Job{Name: "j", Shards: 1, Windows: []Window{{From: at(0), To: at(40), Cron: "*/2 * * * * ?"}}}
	var runs []runSpec
	for i, f := range []float64{2, 4, 6, 8, 10, 12, 14, 16, 18, 22, 24, 26, 28, 30, 32, 34, 36, 38} {
		d := 0.5
		if f == 18 {
			d = 0.79 // ended 18.8: more than the slack before the fire of 20
		}
		runs = append(runs, runSpec{task: "j" + string(rune('a'+i)), job: "j", queued: f, start: f + 0.01, dur: d})
	}
	for _, c := range []struct {
		fault Fault
		want  int
	}{
		{Fault{Kind: "leader-peers-loss", Start: at(10), End: at(16.3)}, 0},
		{Fault{Kind: "leader-registry-loss", Start: at(10), End: at(16.3)}, 0},
		{Fault{Kind: "leader-peers-loss", Start: at(1), End: at(5)}, 1}, // healed 13.8 s before the end
		{Fault{Kind: "kill-standby", Start: at(10), End: at(16.3)}, 1},
	} {
		in := Input{Runs: logOf(runs...), Jobs: []Job{j}, End: at(40), Faults: []Fault{c.fault}}
		if got := Check(in).ByKind()[LostFire]; got != c.want {
			t.Errorf("%s %s-%s: %d lost-fire, want %d", c.fault.Kind, c.fault.Start.Format("05.0"), c.fault.End.Format("05.0"), got, c.want)
		}
	}
}

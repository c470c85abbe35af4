package registry

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/queue"
)

// A misfire=false job (*/2): the launch of the fire of 15:07:24 was
// rolled back (its ACCEPT failed with the agents), the fire of :26 found the entry empty meanwhile and queued
// an execution, and the rollback put the :24 one back beside it: two
// executions pending for a misfire=false job. Pending executions of such a
// job collapse into one: the one put back, due now, with its instant.
func TestRequeueCollapsesAPendingFireWithoutMisfire(t *testing.T) {
	t24, t26 := time.Date(2026, 11, 27, 15, 7, 24, 0, time.UTC), time.Date(2026, 11, 27, 15, 7, 26, 0, time.UTC)
	now := t26.Add(2 * time.Second)
	pending, _ := queue.Add(nil, queue.Trigger{Fire: true, At: t26, Nominal: t26, By: "cron"}, 0)
	rd := requeued(pending, true, nil, "cron", false, t24, now)
	if rd.Count != 1 || !rd.FirstNominal().Equal(t24) || !rd.NotBefore.IsZero() {
		t.Errorf("misfire=false: count %d, next serves %v, held until %v; want 1, %v, none", rd.Count, rd.FirstNominal(), rd.NotBefore, t24)
	}
	if len(rd.PlainBy) != 1 || rd.PlainBy[0] != (queue.Origin{By: "cron", N: 1}) {
		t.Errorf("misfire=false: origins %+v, want one cron", rd.PlainBy)
	}
	rd = requeued(pending, true, nil, "cron", true, t24, now)
	if got := rd.NominalInstants(); rd.Count != 2 || len(got) != 2 || !got[0].Equal(t24) || !got[1].Equal(t26) {
		t.Errorf("misfire=true: count %d, instants %v; want 2, [%v %v]", rd.Count, got, t24, t26)
	}
	withRun, _ := queue.Add(nil, queue.Trigger{Run: &queue.PendingRun{JobParameter: "p", At: t26}, At: t26, By: "api:u"}, 0)
	if rd := requeued(withRun, true, nil, "cron", false, t24, now); rd.Count != 2 || len(rd.Runs) != 1 || !rd.FirstNominal().IsZero() {
		t.Errorf("a pending run with an override does not collapse: count %d, runs %d", rd.Count, len(rd.Runs))
	}
	if rd := requeued(queue.Ready{}, false, nil, "cron", false, t24, now); rd.Count != 1 || !rd.FirstNominal().Equal(t24) {
		t.Errorf("into no entry: count %d, next serves %v", rd.Count, rd.FirstNominal())
	}
}

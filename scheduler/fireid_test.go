package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
)

// The launch of one fire gets one task id, whichever agent and offer it is
// placed on (a second launch is refused by the engine); the next execution
// of the job, another run key and every failover attempt get another.
func TestFireTaskIDOfLaunches(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	launch := func(agent string, rd *queue.Ready, f *queue.Failover) round.Launch {
		pl := round.Launch{Job: jobs.Config{JobName: "ns/job"}, Ready: rd, Failover: f}
		pl.AgentID, pl.OfferID, pl.Request.Shard = agent, "offer-"+agent, 1
		return pl
	}
	fire := &queue.Ready{Job: "ns/job", Count: 1, Since: t0, NotBefore: t0, Version: 4}
	a := fireTaskID(launch("agent-1", fire, nil), jobs.KindReady)
	if b := fireTaskID(launch("agent-2", fire, nil), jobs.KindReady); a != b {
		t.Fatalf("one fire placed on two agents got %s and %s", a, b)
	}
	if ts, _ := jobs.UUIDTime(a.UUID); !ts.Equal(t0) || a.AgentID != "" || a.Kind != jobs.KindReady || a.Item != 1 {
		t.Fatalf("%s: want the fire's instant %s, no agent, READY, item 1", a, t0)
	}
	next, _ := queue.Take(queue.Ready{Count: 2, Since: t0, Version: 4}, t0) // frozen clock: only the count differs
	failed := &queue.Failover{Job: "ns/job", Item: 1, TaskID: a.String(), Since: t0.Add(time.Minute)}
	retried := *failed
	retried.Attempts = 1
	again := *failed
	again.TaskID = fireTaskID(launch("agent-1", nil, failed), jobs.KindFailover).String()
	keyed := func(key string) *queue.Ready {
		return &queue.Ready{Count: 1, Since: t0, Runs: []queue.PendingRun{{IdempotencyKey: key, At: t0}}}
	}
	ids := map[string]string{a.String(): "the fire"}
	for name, pl := range map[string]round.Launch{
		"the next execution":          launch("agent-1", &next, nil),
		"the next fire":               launch("agent-1", &queue.Ready{Count: 1, Since: t0.Add(time.Minute), NotBefore: t0.Add(time.Minute)}, nil),
		"the entry rewritten":         launch("agent-1", &queue.Ready{Count: 1, Since: t0, NotBefore: t0, Version: 5}, nil),
		"run key k1":                  launch("agent-1", keyed("k1"), nil),
		"run key k2":                  launch("agent-1", keyed("k2"), nil),
		"its failover":                launch("agent-1", nil, failed),
		"its second attempt":          launch("agent-1", nil, &retried),
		"the failover's own failover": launch("agent-1", nil, &again),
	} {
		kind := jobs.KindReady
		if pl.Failover != nil {
			kind = jobs.KindFailover
		}
		id := fireTaskID(pl, kind).String()
		if prev, ok := ids[id]; ok {
			t.Fatalf("%s has the id of %s: %s", name, prev, id)
		}
		ids[id] = name
	}
	if a, b := fireTaskID(launch("agent-1", nil, failed), jobs.KindFailover), fireTaskID(launch("agent-9", nil, failed), jobs.KindFailover); a != b {
		t.Fatalf("one failover placed twice got %s and %s", a, b)
	}
}

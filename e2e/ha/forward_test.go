//go:build e2e

package ha

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Writes sent to one standby while the leader is replaced twice: clients
// send triggers with idempotency keys to the instance that joined last (it
// forwards them to the leader), the leader is killed, the next one too (the
// standby itself then leads). A trigger answered 503 is retried with its
// key, as a client does; any other refusal is a failure. Every accepted
// key runs exactly once per shard, and no key runs that was never sent.
func TestForwardedWritesWhileLeaderReplaced(t *testing.T) {
	t.Parallel()
	jobs := []string{"fw-a", "fw-b", "fw-c"} // executions of one job run one at a time: three drain faster
	c := newCluster(t, sharedEnsemble(t), 2*time.Second)
	first := c.add(instOpts{})
	c.awaitLeader(nil, time.Time{})
	second := c.add(instOpts{})
	entry := c.add(instOpts{}) // the highest sequence: a standby until both others are gone
	c.publish(entry)
	for _, j := range jobs {
		c.register(entry, c.newJob(j, "", 2, 0.1, false))
	}
	cl := startTriggerClients(c, entry, jobs, 4)
	for _, victim := range []*instance{first, second} {
		cl.await(8)
		var l *instance
		eventually(t, waitLong, func() bool { l = c.leader(); return l != nil }, "a leader")
		if l != victim {
			t.Fatalf("the leader is %s, want %s", l.name, victim.name)
		}
		dead := victim.life().Kill9()
		t.Logf("killed the leader %s at %s with %d triggers accepted", victim.name, dead.Format("15:04:05.000"), cl.accepted.Load())
		victim.start()
		l, since := c.awaitLeader(victim, dead)
		t.Logf("%s leads from %s", l.name, since.Format("15:04:05.000"))
	}
	cl.await(8)
	cl.stop()
	if l := c.leader(); l != entry {
		t.Errorf("the leader at the end is %v, want %s (the last standby standing)", l, entry.name)
	}
	c.drain(time.Now())
	c.checkOneLeader(nil)
	rs := c.runs()
	checkRuns(t, rs)
	cl.check(rs)
	c.checkSettled()
}

// triggerClients send keyed triggers to one instance, each key until it is
// accepted, a retry pause after a refusal, about 7 keys a second in all.
type triggerClients struct {
	c        *cluster
	jobs     []string
	accepted atomic.Int32
	halt     atomic.Bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	answers  map[string][]answer // per key, every answer until accepted
	jobOf    map[string]string
}

func startTriggerClients(c *cluster, to *instance, jobs []string, n int) *triggerClients {
	tc := &triggerClients{c: c, jobs: jobs, answers: map[string][]answer{}, jobOf: map[string]string{}}
	for cl := range n {
		tc.wg.Add(1)
		go func() {
			defer tc.wg.Done()
			for i := 0; !tc.halt.Load(); i++ {
				tc.send(to, fmt.Sprintf("k-%d-%03d", cl, i), jobs[(cl+i)%len(jobs)])
				time.Sleep(600 * time.Millisecond)
			}
		}()
	}
	return tc
}

func (tc *triggerClients) send(to *instance, key, job string) {
	tc.mu.Lock()
	tc.jobOf[key] = job
	tc.mu.Unlock()
	for deadline := time.Now().Add(2 * waitLong); time.Now().Before(deadline); {
		a := tc.c.trigger(to, job, key, 0.1)
		tc.mu.Lock()
		tc.answers[key] = append(tc.answers[key], a)
		tc.mu.Unlock()
		if a.accepted() {
			tc.accepted.Add(1)
			return
		}
		time.Sleep(50 * time.Millisecond) // a client's retry pause
	}
}

// await waits for n more accepted triggers.
func (tc *triggerClients) await(n int32) {
	tc.c.t.Helper()
	from := tc.accepted.Load()
	eventually(tc.c.t, waitLong, func() bool { return tc.accepted.Load() >= from+n }, "%d more accepted triggers", n)
}

func (tc *triggerClients) stop() {
	tc.halt.Store(true)
	tc.wg.Wait()
}

// check: every key accepted after clear 503s only, and run exactly once
// per shard by its job; no run of a key never sent.
func (tc *triggerClients) check(rs []*shardRun) {
	t := tc.c.t
	t.Helper()
	refused, kinds := 0, map[string]int{}
	for key, as := range tc.answers {
		if last := as[len(as)-1]; !last.accepted() {
			t.Errorf("trigger %s never accepted: %v", key, as)
		}
		for _, a := range as[:len(as)-1] {
			refused++
			kinds[a.String()]++
			if !a.clearRefusal() {
				t.Errorf("trigger %s was refused without a clear 503: %v", key, a)
			}
		}
	}
	ran := map[string]bool{}
	for _, job := range tc.jobs {
		for key, byItem := range keyRuns(rs, job) {
			ran[key] = true
			if byItem[0] != 1 || byItem[1] != 1 || len(byItem) != 2 || tc.jobOf[key] != job {
				t.Errorf("trigger %s of %s ran %v times by shard in %s, want once per shard", key, tc.jobOf[key], byItem, job)
			}
		}
	}
	for key := range tc.answers {
		if !ran[key] {
			t.Errorf("accepted trigger %s never ran (answers %v)", key, tc.answers[key])
		}
	}
	if len(ran) != len(tc.answers) {
		t.Errorf("%d keys ran, %d were sent", len(ran), len(tc.answers))
	}
	t.Logf("%d triggers, %d refusals retried: %v", len(tc.answers), refused, kinds)
	if refused == 0 {
		t.Errorf("no trigger was refused while the leader was replaced: the test did not hit the takeover")
	}
}

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
	const clients = 4
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

	var (
		accepted atomic.Int32
		stop     atomic.Bool
		mu       sync.Mutex
		answers  = map[string][]answer{} // per key, every answer until accepted
		jobOf    = map[string]string{}
		wg       sync.WaitGroup
	)
	for cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				key, job := fmt.Sprintf("k-%d-%03d", cl, n), jobs[(cl+n)%len(jobs)]
				mu.Lock()
				jobOf[key] = job
				mu.Unlock()
				for deadline := time.Now().Add(2 * waitLong); time.Now().Before(deadline); {
					a := c.trigger(entry, job, key, 0.1)
					mu.Lock()
					answers[key] = append(answers[key], a)
					mu.Unlock()
					if a.accepted() {
						accepted.Add(1)
						break
					}
					time.Sleep(50 * time.Millisecond) // a client's retry pause
				}
				time.Sleep(600 * time.Millisecond) // about 7 triggers a second from all clients
			}
		}()
	}

	for _, victim := range []*instance{first, second} {
		n := accepted.Load()
		eventually(t, waitLong, func() bool { return accepted.Load() >= n+8 }, "8 more accepted triggers")
		if l := c.leader(); l != victim {
			t.Fatalf("the leader is %v, want %s", l, victim.name)
		}
		dead := victim.life().kill9()
		t.Logf("killed the leader %s at %s with %d triggers accepted", victim.name, dead.Format("15:04:05.000"), accepted.Load())
		victim.start()
		l, since := c.awaitLeader(victim, dead)
		t.Logf("%s leads from %s", l.name, since.Format("15:04:05.000"))
	}
	n := accepted.Load()
	eventually(t, waitLong, func() bool { return accepted.Load() >= n+8 }, "8 more accepted triggers")
	stop.Store(true)
	wg.Wait()
	if l := c.leader(); l != entry {
		t.Errorf("the leader at the end is %v, want %s (the last standby standing)", l, entry.name)
	}
	c.drain(time.Now())

	c.checkOneLeader(nil)
	rs := c.runs()
	checkRuns(t, rs)
	refused, kinds := 0, map[string]int{}
	for key, as := range answers {
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
	for _, job := range jobs {
		for key, byItem := range keyRuns(rs, job) {
			ran[key] = true
			if byItem[0] != 1 || byItem[1] != 1 || len(byItem) != 2 || jobOf[key] != job {
				t.Errorf("trigger %s of %s ran %v times by shard in %s, want once per shard", key, jobOf[key], byItem, job)
			}
		}
	}
	for key := range answers {
		if !ran[key] {
			t.Errorf("accepted trigger %s never ran (answers %v)", key, answers[key])
		}
	}
	if len(ran) != len(answers) {
		t.Errorf("%d keys ran, %d were sent", len(ran), len(answers))
	}
	t.Logf("%d triggers, %d refusals retried: %v", len(answers), refused, kinds)
	if refused == 0 {
		t.Errorf("no trigger was refused while the leader was replaced: the test did not hit the takeover")
	}
	c.checkSettled()
}

package embedded

import (
	"container/heap"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
)

// simSlack groups simulated actions due within it into one run under the
// cluster mutex (one OFFERS event per framework for all of them).
const simSlack = time.Millisecond

// simulator runs the simulated executors' actions (subscribing, sending
// status updates, exiting) at their due times on Config.Clock: one
// goroutine pops the due actions and runs them with the cluster mutex
// held, allocating once after each group.
type simulator struct {
	c   *Cluster
	cfg SimConfig
	clk clock.Clock
	rng *rand.Rand // guarded by c.mu (used by executors only)

	mu    sync.Mutex // guards queue and seq
	queue simQueue
	seq   uint64

	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

func newSimulator(c *Cluster, cfg SimConfig) *simulator {
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &simulator{c: c, cfg: cfg, clk: c.cfg.Clock, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
}

func (s *simulator) start() { go s.loop() }

// stop ends the loop; actions not yet run are dropped (the cluster is
// closing).
func (s *simulator) stop() {
	close(s.quit)
	<-s.done
}

// at schedules f to run at t with the cluster mutex held.
func (s *simulator) at(t time.Time, f func()) {
	s.mu.Lock()
	s.seq++
	heap.Push(&s.queue, simAction{at: t, seq: s.seq, run: f})
	first := s.queue[0].seq == s.seq
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// after schedules f to run d from now.
func (s *simulator) after(d time.Duration, f func()) { s.at(s.clk.Now().Add(d), f) }

func (s *simulator) loop() {
	defer close(s.done)
	for {
		due, next, ok := s.take()
		if len(due) > 0 {
			s.run(due)
			continue
		}
		var fire <-chan time.Time
		var t clock.Timer
		if ok {
			t = s.clk.NewTimer(next.Sub(s.clk.Now()))
			fire = t.C()
		}
		select {
		case <-s.quit:
			if t != nil {
				t.Stop()
			}
			return
		case <-s.wake:
		case <-fire:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// take pops the actions due now (within simSlack) or reports when the
// next one is due.
func (s *simulator) take() (due []simAction, next time.Time, ok bool) {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 && !s.queue[0].at.After(now.Add(simSlack)) {
		due = append(due, heap.Pop(&s.queue).(simAction))
	}
	if len(s.queue) > 0 {
		return due, s.queue[0].at, true
	}
	return due, time.Time{}, false
}

func (s *simulator) run(due []simAction) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	c.allocateAfter(func() {
		for _, a := range due {
			a.run()
		}
	})
}

// duration draws a task's run time.
func (s *simulator) duration() time.Duration {
	lo, hi := s.cfg.TaskMin, s.cfg.TaskMax
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// fails draws whether a task fails.
func (s *simulator) fails() bool {
	return s.cfg.FailRatio > 0 && s.rng.Float64() < s.cfg.FailRatio
}

type simAction struct {
	at  time.Time
	seq uint64 // FIFO among equal times
	run func()
}

// simQueue is a min-heap of actions by (at, seq).
type simQueue []simAction

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simAction)) }
func (q *simQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = simAction{}
	*q = old[:len(old)-1]
	return x
}

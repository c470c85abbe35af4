package kube

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// countingKV counts commits; while gate is set, the first commit waits on it.
type countingKV struct {
	store.KV
	mu      sync.Mutex
	commits int
	entered chan struct{}
	gate    chan struct{}
}

func (c *countingKV) Commit(ctx context.Context, ops ...store.Op) error {
	c.mu.Lock()
	c.commits++
	first := c.commits == 1
	c.mu.Unlock()
	if first && c.gate != nil {
		close(c.entered)
		<-c.gate
	}
	return c.KV.Commit(ctx, ops...)
}

// taskAt is a task id of job whose id dates it at t.
func taskAt(job string, item int, t time.Time) string {
	id := jobs.NewTaskID(job, item, jobs.KindReady, "n1")
	id.UUID = jobs.UUIDAt(t, []byte{byte(item), 1, 2, 3, 4, 5, 6, 7, 8, 9}, 7)
	return id.String()
}

// TestTailsKeepTheNewest: a job keeps its newest tailsPerJob tails (by the time in their task
// ids), each put and the deletes it makes in one commit.
func TestTailsKeepTheNewest(t *testing.T) {
	ctx := context.Background()
	kv := &countingKV{KV: memory.New()}
	s := &Tails{Registry: registry.New(kv)}
	var ids []string
	for i := range tailsPerJob + 5 {
		id := taskAt("j", i, t0.Add(time.Duration(i)*time.Second))
		ids = append(ids, id)
		if err := s.Put(ctx, id, Tail{Stdout: "out " + id}); err != nil {
			t.Fatal(err)
		}
	}
	if kv.commits != tailsPerJob+5 {
		t.Errorf("%d commits for %d tails put one after the other, want one each", kv.commits, tailsPerJob+5)
	}
	for i, id := range ids {
		got, err := s.Get(ctx, id)
		if kept := i >= 5; kept != (err == nil) || (kept && got.Stdout != "out "+id) {
			t.Errorf("tail %d: %+v %v, kept %v", i, got, err, kept)
		}
	}
}

// TestTailsPutTogether: tails put while a commit is under way are committed together, in
// one more commit.
func TestTailsPutTogether(t *testing.T) {
	ctx := context.Background()
	kv := &countingKV{KV: memory.New(), entered: make(chan struct{}), gate: make(chan struct{})}
	s := &Tails{Registry: registry.New(kv)}
	first := make(chan error, 1)
	go func() { first <- s.Put(ctx, taskAt("j", 0, t0), Tail{Stdout: "0"}) }()
	<-kv.entered // the first commit is under way
	var more []*pendingTail
	for i := 1; i <= 3; i++ { // as Put queues them meanwhile
		pt := &pendingTail{taskID: taskAt("j", i, t0.Add(time.Second)), tail: Tail{Stdout: "x"}, done: make(chan error, 1)}
		if s.enqueue(pt) {
			t.Fatal("a second writer while the first commits")
		}
		more = append(more, pt)
	}
	close(kv.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for _, pt := range more {
		if err := <-pt.done; err != nil {
			t.Fatal(err)
		}
	}
	if kv.commits != 2 {
		t.Errorf("%d commits for 4 tails, 3 put during the first commit: want 2", kv.commits)
	}
	for i := range 4 {
		if _, err := s.Get(ctx, taskAt("j", i, t0.Add(min(time.Duration(i), 1)*time.Second))); err != nil {
			t.Errorf("tail %d: %v", i, err)
		}
	}
}

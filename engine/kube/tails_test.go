package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// memTails is a TailStore in memory that counts commits; while gate is set, the first
// commit waits on it.
type memTails struct {
	mu      sync.Mutex
	tails   map[string]map[string][]byte // job → task id → tail
	commits int
	entered chan struct{}
	gate    chan struct{}
}

func (m *memTails) LogTails(_ context.Context, job string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.tails[job])), nil
}

func (m *memTails) LogTail(_ context.Context, job, taskID string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.tails[job][taskID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoTail, taskID)
	}
	return b, nil
}

func (m *memTails) WriteLogTails(_ context.Context, writes []TailWrite) error {
	m.mu.Lock()
	m.commits++
	first := m.commits == 1
	m.mu.Unlock()
	if first && m.gate != nil {
		close(m.entered)
		<-m.gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tails == nil {
		m.tails = map[string]map[string][]byte{}
	}
	for _, w := range writes {
		if m.tails[w.Job] == nil {
			m.tails[w.Job] = map[string][]byte{}
		}
		if w.Tail == nil {
			delete(m.tails[w.Job], w.TaskID)
		} else {
			m.tails[w.Job][w.TaskID] = w.Tail
		}
	}
	return nil
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
	kv := &memTails{}
	s := &Tails{Store: kv}
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
	kv := &memTails{entered: make(chan struct{}), gate: make(chan struct{})}
	s := &Tails{Store: kv}
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

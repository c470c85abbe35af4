package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// MaxTail bounds each stream's tail kept of a finished task.
const MaxTail = 64 << 10

// tailsPerJob bounds the tails kept per job: the oldest go first.
const tailsPerJob = 20

// Tail is what is kept of a finished task's output.
type Tail struct {
	Stdout string    `json:"stdout"`
	Stderr string    `json:"stderr"`
	At     time.Time `json:"at"`
	// Merged is set when the tail was read from the container's log (stdout and stderr
	// in one): the executor's report did not come.
	Merged bool `json:"merged,omitempty"`
}

// TailStore is where Tails keeps the tails: the wiring hands in the registry's log tails
// (committed behind the leader's fence, so a deposed leader's engine keeps none), which
// this engine reaches through this interface and never by importing the registry.
type TailStore interface {
	// LogTails lists the task ids whose tails job keeps.
	LogTails(ctx context.Context, job string) ([]string, error)
	// LogTail reads a task's kept tail: an error wrapping ErrNoTail when none is kept.
	LogTail(ctx context.Context, job, taskID string) ([]byte, error)
	// WriteLogTails applies writes in one commit.
	WriteLogTails(ctx context.Context, writes []TailWrite) error
}

// TailWrite is one change to the kept tails: Tail set keeps the task's tail (replacing
// one kept), nil forgets it.
type TailWrite struct {
	Job, TaskID string
	Tail        []byte
}

// Tails keeps finished tasks' log tails in a TailStore, so that every scheduler instance
// serves them once the pods are gone. Tails put at about the same time (the shards of one
// execution ending together) are committed together: one commit, which also forgets each
// job's oldest beyond the bound.
type Tails struct {
	Store TailStore

	mu      sync.Mutex
	queue   []*pendingTail
	writing bool // a Put is committing the queue
}

type pendingTail struct {
	taskID string
	tail   Tail
	done   chan error
}

// ErrNoTail is returned for a task whose tail is not kept.
var ErrNoTail = errors.New("kube: no log tail kept for the task")

// jobOf is the job of a task id.
func jobOf(taskID string) (string, error) {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return "", err
	}
	return tid.JobName, nil
}

// Put keeps a task's tail, and forgets the job's oldest beyond the bound. It returns once
// the tail is committed (with the others queued meanwhile: the first Put commits for all).
func (s *Tails) Put(ctx context.Context, taskID string, t Tail) error {
	if _, err := jobOf(taskID); err != nil {
		return err
	}
	pt := &pendingTail{taskID: taskID, tail: t, done: make(chan error, 1)}
	if s.enqueue(pt) {
		s.writeQueued(ctx)
	}
	select {
	case err := <-pt.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue queues a tail; true: the caller is to commit the queue (no one else is).
func (s *Tails) enqueue(pt *pendingTail) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, pt)
	write := !s.writing
	s.writing = true
	return write
}

// writeQueued commits the queued tails, batch after batch, until none is left.
func (s *Tails) writeQueued(ctx context.Context) {
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		if len(batch) == 0 {
			s.writing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		err := s.commit(ctx, batch)
		for _, pt := range batch {
			pt.done <- err
		}
	}
}

// commit puts a batch of tails in one commit, with the deletes of each job's tails
// beyond the newest tailsPerJob (by the time in their task ids: no tail is read back).
func (s *Tails) commit(ctx context.Context, batch []*pendingTail) error {
	byJob := map[string][]*pendingTail{}
	for _, pt := range batch {
		job, _ := jobOf(pt.taskID)
		byJob[job] = append(byJob[job], pt)
	}
	var writes []TailWrite
	for job, pts := range byJob {
		names, err := s.Store.LogTails(ctx, job)
		if err != nil {
			return fmt.Errorf("kube: keep log tails: %w", err)
		}
		stored := make(map[string]bool, len(names))
		for _, n := range names {
			stored[n] = true
		}
		all := slices.Clone(names)
		for _, pt := range pts {
			if !stored[pt.taskID] {
				all = append(all, pt.taskID)
			}
		}
		keep := newest(all, tailsPerJob)
		for _, pt := range pts {
			if keep[pt.taskID] {
				b, err := json.Marshal(pt.tail)
				if err != nil {
					return fmt.Errorf("kube: encode the log tail of %s: %w", pt.taskID, err)
				}
				writes = append(writes, TailWrite{Job: job, TaskID: pt.taskID, Tail: b})
			}
		}
		for _, n := range names {
			if !keep[n] {
				writes = append(writes, TailWrite{Job: job, TaskID: n})
			}
		}
	}
	if err := s.Store.WriteLogTails(ctx, writes); err != nil {
		return fmt.Errorf("kube: keep the log tails of %d tasks: %w", len(batch), err)
	}
	return nil
}

// newest is the set of the n newest task ids by the time in their ids (ids without one
// are the oldest).
func newest(ids []string, n int) map[string]bool {
	at := func(id string) time.Time {
		if tid, err := jobs.ParseTaskID(id); err == nil {
			if t, ok := jobs.UUIDTime(tid.UUID); ok {
				return t
			}
		}
		return time.Time{}
	}
	sort.SliceStable(ids, func(i, j int) bool { return at(ids[i]).After(at(ids[j])) })
	keep := make(map[string]bool, n)
	for _, id := range ids[:min(n, len(ids))] {
		keep[id] = true
	}
	return keep
}

// Get returns a task's kept tail, or ErrNoTail.
func (s *Tails) Get(ctx context.Context, taskID string) (Tail, error) {
	job, err := jobOf(taskID)
	if err != nil {
		return Tail{}, err
	}
	b, err := s.Store.LogTail(ctx, job, taskID)
	if errors.Is(err, ErrNoTail) {
		return Tail{}, ErrNoTail
	}
	if err != nil {
		return Tail{}, err
	}
	var t Tail
	if err := json.Unmarshal(b, &t); err != nil {
		return Tail{}, fmt.Errorf("kube: log tail of %s: %w", taskID, err)
	}
	return t, nil
}

// tailKeeper keeps finished tasks' tails (Config.Tails) and deletes their pods for the
// engine (release.go); it has no state of its own.
type tailKeeper struct {
	cfg    *Config
	clock  clock.Clock
	log    *slog.Logger
	forget func(taskID string) // the engine's: a released task whose pod is gone
}

// keep keeps a finished task's tail: the executor's report's, else the container's log.
func (e tailKeeper) keep(ctx context.Context, id, ns, pod string, final *engine.ExecutorReport) {
	if e.cfg.Tails == nil {
		return
	}
	t := Tail{At: e.clock.Now().UTC()}
	if final != nil && (final.Stdout != "" || final.Stderr != "") {
		t.Stdout, t.Stderr = final.Stdout, final.Stderr
	} else if pod != "" {
		out, err := e.podLog(ctx, ns, pod, MaxTail, false)
		if err != nil {
			e.log.Debug("no container log for the tail of a finished task", "task", id, "err", err)
			return
		}
		t.Stdout, t.Merged = out, true
	}
	if err := e.cfg.Tails.Put(ctx, id, t); err != nil {
		e.log.Warn("keep the log tail of a finished task", "task", id, "err", err)
	}
}

// podLog reads the last bytes of the task container's log (stdout and stderr merged).
func (e tailKeeper) podLog(ctx context.Context, ns, pod string, limit int64, _ bool) (string, error) {
	opts := &corev1.PodLogOptions{Container: containerName, LimitBytes: nil}
	lines := int64(2000)
	opts.TailLines = &lines
	rc, err := e.cfg.Client.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 16<<20))
	if err != nil {
		return "", err
	}
	if int64(len(b)) > limit {
		b = b[int64(len(b))-limit:]
	}
	return strings.ToValidUTF8(string(b), ""), nil
}

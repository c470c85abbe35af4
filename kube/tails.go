package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// TailsPath is where finished tasks' log tails are kept in the registry:
// TailsPath/{jobName}/{taskId}.
const TailsPath = "/kube/logs"

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

// Tails keeps finished tasks' log tails in the registry (fenced by the leader's term), so
// that every scheduler instance serves them once the pods are gone.
type Tails struct{ Registry *registry.Registry }

// ErrNoTail is returned for a task whose tail is not kept.
var ErrNoTail = errors.New("kube: no log tail kept for the task")

func tailPath(taskID string) (string, string, error) {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return "", "", err
	}
	dir := TailsPath + "/" + tid.JobName
	return dir, dir + "/" + taskID, nil
}

// Put keeps a task's tail, and forgets the job's oldest beyond the bound.
func (s *Tails) Put(ctx context.Context, taskID string, t Tail) error {
	dir, p, err := tailPath(taskID)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(t)
	if err := s.Registry.Commit(ctx, store.Put(p, b)); err != nil {
		return fmt.Errorf("kube: keep the log tail of %s: %w", taskID, err)
	}
	nodes, err := s.Registry.KV().List(ctx, dir)
	if err != nil || len(nodes) <= tailsPerJob {
		return nil
	}
	type aged struct {
		path string
		at   time.Time
	}
	all := make([]aged, 0, len(nodes))
	for _, n := range nodes {
		var old Tail
		_ = json.Unmarshal(n.Value, &old)
		all = append(all, aged{n.Path, old.At})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	var ops []store.Op
	for _, a := range all[:len(all)-tailsPerJob] {
		ops = append(ops, store.Delete(a.path, store.AnyVersion))
	}
	return s.Registry.Commit(ctx, ops...)
}

// Get returns a task's kept tail, or ErrNoTail.
func (s *Tails) Get(ctx context.Context, taskID string) (Tail, error) {
	_, p, err := tailPath(taskID)
	if err != nil {
		return Tail{}, err
	}
	n, err := s.Registry.KV().Get(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		return Tail{}, ErrNoTail
	}
	if err != nil {
		return Tail{}, err
	}
	var t Tail
	if err := json.Unmarshal(n.Value, &t); err != nil {
		return Tail{}, fmt.Errorf("kube: log tail of %s: %w", taskID, err)
	}
	return t, nil
}

// keepTail keeps a finished task's tail: the executor's report's, else the container's log.
func (e *Engine) keepTail(ctx context.Context, id, pod string, final *engine.ExecutorReport) {
	if e.cfg.Tails == nil {
		return
	}
	t := Tail{At: e.clock.Now().UTC()}
	if final != nil && (final.Stdout != "" || final.Stderr != "") {
		t.Stdout, t.Stderr = final.Stdout, final.Stderr
	} else if pod != "" {
		out, err := e.podLog(ctx, pod, MaxTail, false)
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
func (e *Engine) podLog(ctx context.Context, pod string, limit int64, _ bool) (string, error) {
	opts := &corev1.PodLogOptions{Container: containerName, LimitBytes: nil}
	lines := int64(2000)
	opts.TailLines = &lines
	rc, err := e.cfg.Client.CoreV1().Pods(e.cfg.Namespace).GetLogs(pod, opts).Stream(ctx)
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

package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/store"
)

// TailsPath is where the Kubernetes engine keeps finished tasks' log
// tails: /kube/logs/{jobName}/{taskId}, each the engine's own encoding
// (the registry stores it as given).
const TailsPath = "/kube/logs"

// ErrTailNotFound is returned for a task whose log tail is not kept.
var ErrTailNotFound = errors.New("log tail not found")

// TailWrite is one change to the kept log tails: Tail set keeps the task's
// tail (replacing one kept), nil forgets it.
type TailWrite struct {
	Job, TaskID string
	Tail        []byte
}

func tailPath(job, taskID string) string { return TailsPath + "/" + job + "/" + taskID }

// LogTails lists the task ids whose tails a job keeps.
func (wk Work) LogTails(ctx context.Context, job string) ([]string, error) {
	ids, err := wk.r.kv.Children(ctx, TailsPath+"/"+job)
	if err != nil {
		return nil, fmt.Errorf("registry: list the log tails of %s: %w", job, err)
	}
	return ids, nil
}

// LogTail reads a task's kept tail, or ErrTailNotFound.
func (wk Work) LogTail(ctx context.Context, job, taskID string) ([]byte, error) {
	n, err := wk.r.kv.Get(ctx, tailPath(job, taskID))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrTailNotFound, taskID)
	}
	if err != nil {
		return nil, fmt.Errorf("registry: read the log tail of %s: %w", taskID, err)
	}
	return n.Value, nil
}

// WriteLogTails applies writes in one commit behind the fence (a deposed
// leader's engine keeps no tail).
func (wk Work) WriteLogTails(ctx context.Context, writes []TailWrite) error {
	if len(writes) == 0 {
		return nil
	}
	ops := make([]store.Op, 0, len(writes))
	for _, w := range writes {
		p := tailPath(w.Job, w.TaskID)
		if w.Tail == nil {
			ops = append(ops, store.Delete(p, store.AnyVersion))
		} else {
			ops = append(ops, store.Put(p, w.Tail))
		}
	}
	return wk.r.commit(ctx, ops...)
}

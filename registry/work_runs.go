package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
)

// runsPath holds, per job, what the leader knows of its recent runs
// (/state/runs/{jobName}): the count of failed runs in a row that
// pauseAfterFailures compares with its limit. It lives in the registry so
// a new leader continues the count.
const runsPath = "/state/runs"

// RunStateOf reads a job's run record (zero when it has none). A record
// that does not decode is set aside and read as none: the job's next end
// writes it anew (a failure streak counted before it is lost, never a
// task's end).
func (wk Work) RunStateOf(ctx context.Context, job string) (task.RunState, error) {
	var rs task.RunState
	n, err := wk.r.kv.Get(ctx, runsPath+"/"+job)
	if errors.Is(err, store.ErrNotFound) {
		return rs, nil
	}
	if err != nil {
		return rs, err
	}
	if err := decodeAt(n.Path, n.Value, &rs); err != nil {
		wk.r.setAside(n, err)
		return task.RunState{}, nil
	}
	return rs, nil
}

// putRunStateOp writes a job's run record.
func putRunStateOp(job string, rs task.RunState) store.Op {
	return putJSON(runsPath+"/"+job, rs)
}

// pauseOp disables a job, recording why.
func pauseOp(job string, p task.Pause) store.Op {
	return putJSON(disabledJobPath+"/"+job, p)
}

// Pauses returns the disabled jobs whose flag pauseAfterFailures set, with
// why (other disabled jobs are absent).
func (wk Work) Pauses(ctx context.Context) (map[string]task.Pause, error) {
	nodes, err := wk.r.kv.List(ctx, disabledJobPath)
	if err != nil {
		return nil, err
	}
	out := map[string]task.Pause{}
	for _, n := range nodes {
		if p, ok := decodePause(n.Value); ok {
			out[lastSegment(n.Path)] = p
		}
	}
	return out, nil
}

// PauseOf returns why a job was paused, if pauseAfterFailures disabled it.
func (wk Work) PauseOf(ctx context.Context, job string) (task.Pause, bool, error) {
	n, err := wk.r.kv.Get(ctx, disabledJobPath+"/"+job)
	if errors.Is(err, store.ErrNotFound) {
		return task.Pause{}, false, nil
	}
	if err != nil {
		return task.Pause{}, false, err
	}
	p, ok := decodePause(n.Value)
	return p, ok, nil
}

func decodePause(b []byte) (task.Pause, bool) {
	var p task.Pause
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &p) != nil || p.By != task.PausedBy {
		return task.Pause{}, false
	}
	return p, true
}

// ErrRunNotFound is returned for an unknown idempotency key.
var ErrRunNotFound = errors.New("run not found")

// RunRecordOf reads a trigger's record.
func (wk Work) RunRecordOf(ctx context.Context, key string) (task.RunRecord, error) {
	var rec task.RunRecord
	n, err := wk.r.kv.Get(ctx, TriggerKeysPath+"/"+key)
	if errors.Is(err, store.ErrNotFound) {
		return rec, fmt.Errorf("%w: no trigger with idempotency key '%s' in the last 24 hours", ErrRunNotFound, key)
	}
	if err != nil {
		return rec, err
	}
	if err := decodeAt(n.Path, n.Value, &rec); err != nil {
		wk.r.setAside(n, err)
		return task.RunRecord{}, err
	}
	return rec, nil
}

// putRunRecordOp writes a trigger's record.
func putRunRecordOp(key string, rec task.RunRecord) store.Op {
	return putJSON(TriggerKeysPath+"/"+key, rec)
}

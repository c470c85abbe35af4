package registry

import (
	"context"
	"fmt"

	"github.com/ejcloud/elasticjob/queue"
)

// GangMarks reads every job's gang mark: job → the launch's name.
func (wk Work) GangMarks(ctx context.Context) (map[string]string, error) {
	nodes, err := wk.r.kv.List(ctx, gangPath)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		out[lastSegment(n.Path)] = string(n.Value)
	}
	return out, nil
}

// FailoverOf lists one job's failover entries.
func (wk Work) FailoverOf(ctx context.Context, job string) ([]queue.Failover, error) {
	nodes, err := wk.r.kv.List(ctx, failoverPath+"/"+job)
	if err != nil {
		return nil, fmt.Errorf("registry: list the failover entries of %s: %w", job, err)
	}
	out := make([]queue.Failover, 0, len(nodes))
	for _, n := range nodes {
		f, ok, err := decodeFailover(job, n)
		if wk.r.setAside(n, err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, f)
		}
	}
	return out, nil
}

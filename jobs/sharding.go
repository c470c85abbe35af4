package jobs

import (
	"fmt"
	"strconv"
	"strings"
)

// ShardingContext is what each shard is handed (SPEC.md §2).
type ShardingContext struct {
	// JobName is the job's name in its namespace; Namespace names that
	// namespace (absent: the default one).
	JobName            string `json:"jobName"`
	Namespace          string `json:"namespace,omitempty"`
	TaskID             string `json:"taskId"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	JobParameter       string `json:"jobParameter"`
	ShardingItem       int    `json:"shardingItem"`
	ShardingParameter  string `json:"shardingParameter"`
	// Inputs are a workflow node's inputs: the outputs of the nodes it
	// depends on (node id → key → value); absent outside workflows.
	Inputs Inputs `json:"inputs,omitempty"`
	// ScheduledTime is the nominal instant of the schedule the run stands
	// for: set for a backfill's runs (RFC 3339, UTC), absent otherwise.
	ScheduledTime string `json:"scheduledTime,omitempty"`
}

// ParseShardingItemParameters parses "0=Beijing,1=Shanghai" into item →
// parameter. Items must be in [0, total). An empty string gives an empty map.
// A parameter may contain '='; surrounding spaces are trimmed.
func ParseShardingItemParameters(s string, total int) (map[int]string, error) {
	out := map[int]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%w: shardingItemParameters entry %q must look like 0=value", ErrInvalid, part)
		}
		item, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("%w: shardingItemParameters entry %q: item %q is not a number", ErrInvalid, part, strings.TrimSpace(k))
		}
		if item < 0 || item >= total {
			return nil, fmt.Errorf("%w: shardingItemParameters item %d must be in [0, %d)", ErrInvalid, item, total)
		}
		if _, dup := out[item]; dup {
			return nil, fmt.Errorf("%w: shardingItemParameters item %d appears twice", ErrInvalid, item)
		}
		out[item] = strings.TrimSpace(v)
	}
	return out, nil
}

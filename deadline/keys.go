package deadline

import (
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/task"
)

func nsKey(ns, name string) string         { return namespace.Key(ns, name) }
func splitKey(key string) (string, string) { return namespace.Split(key) }

// execKey names one waiting execution: its job (the registry's key) and
// since when it waits (UnixNano; 0: the zero time).
type execKey struct {
	job   string
	since int64
}

// startedAfter is the earliest launch at or after since among a job's
// running tasks.
func startedAfter(shards map[int]task.Entry, since time.Time) (time.Time, bool) {
	var at time.Time
	for _, e := range shards {
		if e.LaunchedAt.Before(since) {
			continue
		}
		if at.IsZero() || e.LaunchedAt.Before(at) {
			at = e.LaunchedAt
		}
	}
	return at, !at.IsZero()
}

package deadline

import (
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/task"
)

func nsKey(ns, name string) string         { return namespace.Key(ns, name) }
func splitKey(key string) (string, string) { return namespace.Split(key) }

// trackKey names one waiting execution: its job and since when it waits.
func trackKey(job string, since time.Time) string {
	return job + "\x00" + strconv.FormatInt(since.UnixNano(), 10)
}

func splitTrackKey(k string) (string, time.Time) {
	i := strings.LastIndexByte(k, 0)
	n, _ := strconv.ParseInt(k[i+1:], 10, 64)
	return k[:i], time.Unix(0, n)
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

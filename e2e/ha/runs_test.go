//go:build e2e

package ha

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shardRun is one task as the chaos script recorded it.
type shardRun struct {
	job, task, source, key string
	item                   int
	start, end             time.Time
	starts, ends, kills    int // lines of each kind (1, 1, 0 for a clean run)
}

func (r *shardRun) String() string {
	return fmt.Sprintf("%s#%d %s..%s task %s (%s, key %s, starts %d ends %d kills %d)", r.job, r.item,
		r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"), shortTask(r.task), r.source, r.key, r.starts, r.ends, r.kills)
}

// shortTask is the uuid part of a task id.
func shortTask(id string) string {
	if i := strings.LastIndex(id, "@-@"); i >= 0 {
		return id[i+3:]
	}
	return id
}

// runs reads OUT/runs.log: every task, by start.
func (c *cluster) runs() []*shardRun {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.out, "runs.log"))
	if err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
	rs, err := parseRuns(b)
	if err != nil {
		c.t.Fatal(err)
	}
	return rs
}

func parseRuns(b []byte) ([]*shardRun, error) {
	byTask := map[string]*shardRun{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 7 {
			return nil, fmt.Errorf("runs.log: malformed line %q", sc.Text())
		}
		at, err := unixTime(f[1])
		if err != nil {
			return nil, fmt.Errorf("runs.log: line %q: %w", sc.Text(), err)
		}
		item, err := strconv.Atoi(f[3])
		if err != nil {
			return nil, fmt.Errorf("runs.log: line %q: %w", sc.Text(), err)
		}
		r := byTask[f[4]]
		if r == nil {
			r = &shardRun{job: f[2], item: item, task: f[4], source: f[5], key: f[6]}
			byTask[f[4]] = r
		}
		switch f[0] {
		case "start":
			r.starts++
			r.start = at
		case "end":
			r.ends++
			r.end = at
		case "killed":
			r.kills++
			r.end = at
		default:
			return nil, fmt.Errorf("runs.log: unknown event in %q", sc.Text())
		}
	}
	out := make([]*shardRun, 0, len(byTask))
	for _, r := range byTask {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out, nil
}

func unixTime(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(s, ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	frac = (frac + "000000000")[:9]
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(secs, ns), nil
}

// checkRuns fails the test for a task that started twice, did not end
// cleanly (killed, or still running after the drain), or overlapped
// another run of the same shard (two executions of one job at once).
func checkRuns(t *testing.T, rs []*shardRun) {
	t.Helper()
	last := map[string]*shardRun{}
	for _, r := range rs {
		switch {
		case r.starts != 1:
			t.Errorf("task ran %d times: %v", r.starts, r)
		case r.kills != 0:
			t.Errorf("task was killed: %v", r)
		case r.ends != 1:
			t.Errorf("task did not end: %v", r)
		}
		k := fmt.Sprintf("%s#%d", r.job, r.item)
		if p := last[k]; p != nil && r.start.Before(p.end) {
			t.Errorf("two runs of %s at once: %v and %v", k, p, r)
		}
		if p := last[k]; p == nil || r.end.After(p.end) {
			last[k] = r
		}
	}
}

// byJob groups runs by job, then by shard item.
func byJob(rs []*shardRun) map[string]map[int][]*shardRun {
	m := map[string]map[int][]*shardRun{}
	for _, r := range rs {
		if m[r.job] == nil {
			m[r.job] = map[int][]*shardRun{}
		}
		m[r.job][r.item] = append(m[r.job][r.item], r)
	}
	return m
}

// checkExact fails the test unless every shard of job ran exactly want
// times.
func checkExact(t *testing.T, rs []*shardRun, job string, shards, want int) {
	t.Helper()
	got := byJob(rs)[job]
	for item := range shards {
		if n := len(got[item]); n != want {
			t.Errorf("%s shard %d ran %d times, want %d (one per fire): %v", job, item, n, want, got[item])
		}
	}
}

//go:build e2e

package ha

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The etcd shape with history on (no event_trace_rdb_url, no MySQL): the
// history is replicated through the etcd cluster and every replica serves
// it from its own SQLite (history/replog); the store's operations through
// ejctl on a live cluster; the store's metrics on /metrics.

// execRow is a row of GET /api/job/events/executions.
type execRow struct {
	TaskID       string     `json:"taskId"`
	JobName      string     `json:"jobName"`
	ShardingItem int        `json:"shardingItem"`
	StartTime    *time.Time `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
	Success      bool       `json:"success"`
}

// executions is every execution row in's history holds (all pages);
// ok false when the instance did not answer.
func (in *instance) executions(query string) ([]execRow, bool) {
	var all []execRow
	for page := 1; page < 1000; page++ {
		code, out, _, err := in.request(http.MethodGet, fmt.Sprintf("/api/job/events/executions?per_page=100&page=%d%s", page, query), nil)
		if err != nil || code != http.StatusOK {
			return nil, false
		}
		var p struct {
			Total int       `json:"total"`
			Rows  []execRow `json:"rows"`
		}
		if json.Unmarshal(out, &p) != nil {
			return nil, false
		}
		all = append(all, p.Rows...)
		if len(p.Rows) == 0 || len(all) >= p.Total {
			return all, true
		}
	}
	return all, true
}

// historyDiff compares a replica's execution rows with the runs the chaos
// script recorded: "" when every run has exactly one row, complete and
// successful, and no row names a task that did not run.
func historyDiff(rows []execRow, rs []*shardRun) string {
	byTask := map[string][]execRow{}
	for _, r := range rows {
		byTask[r.TaskID] = append(byTask[r.TaskID], r)
	}
	var problems []string
	ran := map[string]bool{}
	for _, r := range rs {
		ran[r.task] = true
		got := byTask[r.task]
		switch {
		case len(got) == 0:
			problems = append(problems, "no row for "+r.String())
		case len(got) > 1:
			problems = append(problems, fmt.Sprintf("%d rows for %v", len(got), r))
		case got[0].CompleteTime == nil || !got[0].Success:
			problems = append(problems, fmt.Sprintf("row not complete and successful for %v: %+v", r, got[0]))
		}
	}
	for task := range byTask {
		if !ran[task] {
			problems = append(problems, "a row for task "+task+", which the runs do not have")
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "\n")
}

// Three etcd-shape schedulers with history and no database: jobs run, the
// leader is killed with -9 during a run and started again on its data;
// afterwards every replica's history API returns every execution that
// ran, exactly once, complete: no row lost or doubled across the takeover.
func TestEtcdHistoryAcrossTakeover(t *testing.T) {
	t.Parallel()
	c := newEtcdClusterOf(t, 3, nil, true)
	first, _ := c.awaitLeader(nil, time.Time{})
	c.publish(first)

	start := time.Now().Add(planLead).Truncate(time.Second)
	// The jobs fire every 2 s from start and run 1.2 s: the kill, half a
	// second before the slot (an odd second after start), falls in a run.
	slot := slotsFrom(start.Add(5*time.Second), time.Second, 1)[0]
	if slot.Sub(start)%(2*time.Second) == 0 {
		slot = slot.Add(time.Second)
	}
	end := slot.Add(6 * time.Second)
	exact := c.planJobs(first, "hx", start, end, 2, 1.2, []time.Time{slot})

	c.steady(slot.Add(-500 * time.Millisecond))
	// The kill must fall in a run: on a loaded machine a fire's tasks start
	// most of a second after it, so the planned instant alone can fall
	// between runs.
	leader := c.awaitFreshRun(runFresh)
	dead := leader.life().Kill9()
	next, since := c.awaitLeader(leader, dead)
	t.Logf("%s killed at %s; %s leads from %s", leader.name, dead.Format("15:04:05.000"), next.name, since.Format("15:04:05.000"))
	leader.start() // back on its data: it publishes what it spooled and catches up
	c.drain(end.Add(time.Second))

	rs := c.runs()
	checkRuns(t, rs)
	for _, j := range exact {
		checkExact(t, rs, j.name, 2, len(j.fires))
	}
	if runningAt(rs, []time.Time{dead}) == 0 {
		t.Errorf("no task was running when the leader was killed")
	}
	for _, in := range c.instances() {
		var diff string
		var rows []execRow
		ok := poll(waitLong, func() bool {
			var answered bool
			rows, answered = in.executions("")
			if !answered {
				diff = "the history API did not answer"
				return false
			}
			diff = historyDiff(rows, rs)
			return diff == ""
		})
		if !ok {
			t.Errorf("%s's history (%d rows) against the %d runs:\n%s", in.name, len(rows), len(rs), diff)
		} else {
			t.Logf("%s's history: %d executions, one per run", in.name, len(rows))
		}
		// The task results counted as the log was applied: every run a
		// success, once, on every replica.
		var success, failed int
		if !poll(waitLong, func() bool {
			success, failed = in.taskResults()
			return success == len(rs) && failed == 0
		}) {
			t.Errorf("%s's task-result statistics: %d successes, %d failures; want the %d runs' successes", in.name, success, failed, len(rs))
		}
	}
	c.checkSettled()
}

// taskResults sums in's task-result statistics of the last week (hours,
// the current one from its minutes); -1s when it did not answer.
func (in *instance) taskResults() (success, failed int) {
	code, out, _, err := in.request(http.MethodGet, "/api/job/statistics/tasks/results?since=lastWeek", nil)
	var pts []struct {
		SuccessCount int `json:"successCount"`
		FailedCount  int `json:"failedCount"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(out, &pts) != nil {
		return -1, -1
	}
	for _, p := range pts {
		success += p.SuccessCount
		failed += p.FailedCount
	}
	return success, failed
}

// ejctl runs bin/ejctl against in and returns its standard output.
func (in *instance) ejctl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "ejctl"), append([]string{"--addr", in.base}, args...)...)
	cmd.Env = append(os.Environ(), "EJCTL_CONFIG="+filepath.Join(in.c.dir, "ejctl.yaml"), "EJCTL_TOKEN=", "EJCTL_ADDR=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("ejctl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// storeMembers is `ejctl -o json cluster members` on in (nil when it failed).
func (in *instance) storeMembers() []storeMemberRow {
	out, err := in.ejctl("-o", "json", "cluster", "members")
	if err != nil {
		return nil
	}
	var ms []storeMemberRow
	if json.Unmarshal([]byte(out), &ms) != nil {
		return nil
	}
	return ms
}

type storeMemberRow struct {
	Name    string `json:"name"`
	Healthy bool   `json:"healthy"`
	Leader  bool   `json:"leader"`
}

// allHealthy reports whether ms are exactly names, every one healthy.
func allHealthy(ms []storeMemberRow, names ...string) bool {
	if len(ms) != len(names) {
		return false
	}
	got := map[string]bool{}
	for _, m := range ms {
		got[m.Name] = m.Healthy
	}
	for _, n := range names {
		if !got[n] {
			return false
		}
	}
	return true
}

var addedPeers = regexp.MustCompile(`(?m)^\s*etcd_peers=(\S+)$`)

// Operations on a live etcd-shape cluster, through ejctl: members lists
// three healthy; a standby is stopped and its data directory wiped (a
// lost disk), `cluster remove` and `cluster add` replace its member, and
// it starts again with etcd_join, the peers add printed and an empty
// directory: it rejoins, the cluster is three healthy again, and it
// serves the history of the runs after it rejoined. Then `cluster backup`
// and `cluster restore` round trip: a job deregistered after the backup
// is back after the restore. /metrics on a replica shows the store's
// metrics (size, members, leader changes), etcd's own, and the history
// log's.
func TestEtcdReplaceMemberAndBackup(t *testing.T) {
	t.Parallel()
	c := newEtcdClusterOf(t, 3, nil, true)
	leader, _ := c.awaitLeader(nil, time.Time{})
	c.publish(leader)
	var names []string
	for _, in := range c.instances() {
		names = append(names, in.name)
	}
	var ms []storeMemberRow
	eventually(t, waitLong, func() bool { ms = leader.storeMembers(); return allHealthy(ms, names...) },
		"ejctl cluster members to list %v healthy (last: %+v)", names, lazy(func() any { return ms }))
	out, err := leader.ejctl("cluster", "members")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ejctl cluster members:\n%s", out)

	// A job that runs every second through the replacement.
	c.register(leader, c.newJob("tick", "* * * * * ?", 1, 0.1, false))

	var victim *instance
	for _, in := range c.instances() {
		if in != leader {
			victim = in
			break
		}
	}
	victim.life().Stop(t)
	if err := os.RemoveAll(victim.dataDir); err != nil {
		t.Fatal(err)
	}
	// The removal is a raft configuration change: on a loaded machine an election can hold
	// it past ejctl's timeout. Sent again until done; a removal that went through before
	// its answer was lost finds no such member.
	var removed error
	eventually(t, waitLong, func() bool {
		_, removed = leader.ejctl("cluster", "remove", victim.name, "--yes")
		return removed == nil || strings.Contains(removed.Error(), "no such member")
	}, "ejctl cluster remove %s (last: %v)", victim.name, lazy(func() any { return removed }))
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", victim.member.peer)
	var added string
	// etcd refuses an add until the remaining members have been connected
	// for 5 s (the admin waits for that, bounded); retry what it refused.
	eventually(t, waitLong, func() bool {
		added, err = leader.ejctl("cluster", "add", victim.name, peerURL)
		return err == nil
	}, "ejctl cluster add %s %s (last: %v)", victim.name, peerURL, lazy(func() any { return err }))
	m := addedPeers.FindStringSubmatch(added)
	if m == nil || !strings.Contains(added, "etcd_join=true") {
		t.Fatalf("ejctl cluster add printed no etcd_peers and etcd_join=true:\n%s", added)
	}
	victim.join = m[1]
	rejoined := time.Now()
	victim.start()
	eventually(t, waitLong, func() bool { ms = leader.storeMembers(); return allHealthy(ms, names...) },
		"the replaced member to be healthy again (last: %+v)", lazy(func() any { return ms }))
	eventually(t, waitLong, func() bool {
		rows, ok := victim.executions("&jobName=tick")
		for _, r := range rows {
			if ok && r.StartTime != nil && r.StartTime.After(rejoined) && r.CompleteTime != nil {
				return true
			}
		}
		return false
	}, "%s, rejoined, to serve the history of a run after it rejoined", victim.name)
	if _, err := victim.ejctl("cluster", "members"); err != nil {
		t.Errorf("ejctl on the rejoined member: %v", err)
	}

	// Backup, deregister, restore: the job is back.
	backup := filepath.Join(c.dir, "registry.backup")
	if out, err := leader.ejctl("cluster", "backup", backup); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("ejctl cluster backup: %s", strings.TrimSpace(out))
	}
	leader.must(http.MethodDelete, "/api/job/tick/deregister", nil)
	eventually(t, waitLong, func() bool {
		code, _, _, err := leader.request(http.MethodGet, "/api/job/jobs/tick", nil)
		return err == nil && code == http.StatusNotFound
	}, "the job to be gone after deregister")
	if out, err := leader.ejctl("cluster", "restore", backup, "--yes"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("ejctl cluster restore: %s", strings.TrimSpace(out))
	}
	for _, in := range c.instances() {
		eventually(t, waitLong, func() bool {
			code, _, _, err := in.request(http.MethodGet, "/api/job/jobs/tick", nil)
			return err == nil && code == http.StatusOK
		}, "the job deregistered after the backup to be back on %s after the restore", in.name)
	}

	// The store's metrics on a standby's /metrics.
	code, body, _, err := victim.request(http.MethodGet, "/metrics", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics on %s: %d %v", victim.name, code, err)
	}
	for _, want := range []string{"elasticjob_store_members 3", "elasticjob_store_db_size_bytes{member=", "elasticjob_store_leader_changes_total",
		"elasticjob_store_member_healthy{member=", "elasticjob_store_commit_seconds_count", "etcd_server_leader_changes_seen_total",
		"etcd_mvcc_db_total_size_in_bytes", "elasticjob_history_log_applied_events_total"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics on %s lacks %q", victim.name, want)
		}
	}
	c.checkSettled()
}

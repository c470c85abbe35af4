package ejctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func (c runGroup) tasksCmd() *cobra.Command {
	var job string
	cmd := &cobra.Command{
		Use:       "tasks [running|ready|failover]",
		Short:     "Show running tasks, pending executions and shards waiting for failover",
		Args:      cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"running", "ready", "failover"},
		RunE: func(cmd *cobra.Command, args []string) error {
			views := []string{"running", "ready", "failover"}
			if len(args) == 1 {
				views = args
			}
			return c.tasks(cmd.Context(), views, job)
		},
	}
	cmd.Flags().StringVar(&job, "job", "", "only this job's")
	return cmd
}

func (c runGroup) tasks(ctx context.Context, views []string, job string) error {
	all := map[string][]map[string]any{}
	for _, v := range views {
		var rows []map[string]any
		if err := c.client.get(ctx, "/api/job/tasks/"+v, nil, &rows); err != nil {
			return err
		}
		kept := rows[:0]
		for _, r := range rows {
			if job == "" || r["jobName"] == job {
				kept = append(kept, r)
			}
		}
		all[v] = kept
	}
	if c.json() {
		if len(views) == 1 {
			return c.printJSON(all[views[0]])
		}
		return c.printJSON(all)
	}
	for i, v := range views {
		if len(views) > 1 {
			if i > 0 {
				fmt.Fprintln(c.env.Stdout)
			}
			fmt.Fprintf(c.env.Stdout, "%s (%d)\n", strings.ToUpper(v), len(all[v]))
		}
		if err := c.taskTable(v, all[v]); err != nil {
			return err
		}
	}
	return nil
}

func (c runGroup) taskTable(view string, rows []map[string]any) error {
	var out [][]string
	switch view {
	case "running":
		for _, r := range rows {
			state := str(r["state"])
			if r["retiring"] == true { // the old task of a DAEMON shard's overlapping move
				state += " (retiring)"
			}
			out = append(out, []string{str(r["jobName"]), str(r["shardingItem"]), state, str(r["hostname"]), since(r["launchedAt"]), str(r["taskId"])})
		}
		return c.table([]string{"JOB", "SHARD", "STATE", "HOST", "LAUNCHED", "TASK"}, out)
	case "ready":
		for _, r := range rows {
			reason, why := waitWords(r["waiting"])
			out = append(out, []string{str(r["jobName"]), str(r["times"]), since(r["since"]), position(r), estimated(r), reason, why})
		}
		return c.table([]string{"JOB", "PENDING", "WAITING SINCE", "POS", "EST. START", "REASON", "WHY"}, out)
	}
	for _, r := range rows {
		reason, why := waitWords(r["waiting"])
		out = append(out, []string{str(r["jobName"]), str(r["shardingItem"]), since(r["since"]), str(r["taskId"]), position(r), estimated(r), reason, why})
	}
	return c.table([]string{"JOB", "SHARD", "FAILED SINCE", "FAILED TASK", "POS", "EST. START", "REASON", "WHY"}, out)
}

// position is a waiting row's place in its namespace's order ("-": none given).
func position(r map[string]any) string {
	if r["position"] == nil {
		return "-"
	}
	return str(r["position"])
}

// estimated is a waiting row's estimated start ("unknown" when the API
// gave none: nothing ahead of it has an expected end; "never" for work
// larger than the whole cluster, which starts only once it grows).
func estimated(r map[string]any) string {
	if w, _ := r["waiting"].(map[string]any); w != nil && w["reason"] == "never_fits" {
		return "never"
	}
	if r["estimatedStart"] == nil {
		return "unknown"
	}
	return since(r["estimatedStart"])
}

// since formats an RFC 3339 time from the API in local time.
func since(v any) string {
	t, err := time.Parse(time.RFC3339Nano, str(v))
	if err != nil {
		return str(v)
	}
	return fmtTime(t)
}

func (c runGroup) historyCmd() *cobra.Command {
	var job, task, source, by, from, to string
	var failed, succeeded, killed bool
	var limit, page int
	cmd := &cobra.Command{
		ValidArgsFunction: c.completeNames(jobKind),
		Use:               "history [JOB]",
		Short:             "List executions (newest first), with filters; JOB is --job's",
		Example:           "  ejctl history my_job\n  ejctl history --job my_job --failed --limit 20\n  ejctl history --since 1h\n  ejctl history --since '2026-11-01 00:00:00' --until 30m -o json",
		Args:              optionalArg("JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"per_page": {strconv.Itoa(limit)}, "page": {strconv.Itoa(page)}, "sort": {"startTime"}, "order": {"desc"}}
			if len(args) == 1 {
				if job != "" && job != args[0] {
					return usagef("history: the job is named twice, %q and --job %q", args[0], job)
				}
				job = args[0]
			}
			var err error
			if from, err = c.timeArg("--since", from); err != nil {
				return err
			}
			if to, err = c.timeArg("--until", to); err != nil {
				return err
			}
			for k, v := range map[string]string{"jobName": job, "taskId": task, "executionSource": source, "triggeredBy": by, "startTime": from, "endTime": to} {
				if v != "" {
					q.Set(k, v)
				}
			}
			switch {
			case btoi(failed)+btoi(succeeded)+btoi(killed) > 1:
				return usagef("history: --failed, --succeeded and --killed exclude each other")
			case failed:
				q.Set("result", "FAILED")
			case killed:
				q.Set("result", "KILLED")
			case succeeded:
				q.Set("result", "SUCCEEDED")
			}
			return c.history(cmd.Context(), q, job)
		},
	}
	f := cmd.Flags()
	f.StringVar(&job, "job", "", "only this job's executions")
	f.StringVar(&task, "task", "", "only this task's")
	f.StringVar(&source, "source", "", "NORMAL_TRIGGER, MISFIRE or FAILOVER")
	f.StringVar(&by, "triggered-by", "", "who or what triggered it: cron, catch-up, api:USER, console:USER, ejctl:USER, retry, failover, daemon, kill…")
	f.StringVar(&from, "since", "", "started at or after: a time (yyyy-MM-dd HH:mm:ss or RFC 3339) or a duration ago (30m, 1h, 2d)")
	f.StringVar(&to, "until", "", "started at or before: a time or a duration ago, as --since")
	f.BoolVar(&failed, "failed", false, "only failed executions (not the killed ones: --killed)")
	f.BoolVar(&killed, "killed", false, "only killed executions (job kill, the job deleted or rescheduled while running)")
	f.BoolVar(&succeeded, "succeeded", false, "only successful executions")
	f.IntVar(&limit, "limit", 20, "rows per page (at most 1000)")
	f.IntVar(&page, "page", 1, "page number, from 1")
	return cmd
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// history prints the executions q selects; job, when named, must be a
// job of the namespace or one with history (a deleted job's is kept).
func (c runGroup) history(ctx context.Context, q url.Values, job string) error {
	var raw json.RawMessage
	if err := c.client.get(ctx, "/api/job/events/executions", q, &raw); err != nil {
		return err
	}
	if err := c.checkHistoryJob(ctx, raw, job); err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(raw)
	}
	var page struct {
		Total int              `json:"total"`
		Rows  []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	rows := make([][]string, 0, len(page.Rows))
	for _, r := range page.Rows {
		result := "ok"
		switch {
		case r["success"] == true:
		case r["completeTime"] == nil:
			result = "running"
		case r["result"] == "KILLED":
			result = "KILLED"
		default:
			result = "FAILED"
		}
		fire := "-" // the cron instant it served (none: a run no instant queued)
		if r["nominalAt"] != nil {
			fire = since(r["nominalAt"])
		}
		rows = append(rows, []string{str(r["jobName"]), str(r["shardingItem"]), str(r["source"]), orDash(str(r["triggeredBy"])), fire,
			since(r["startTime"]), fmtMs(r["durationMs"]), result, str(r["hostname"]), str(r["taskId"]), oneLine(str(r["failureCause"]))})
	}
	if err := c.table([]string{"JOB", "SHARD", "SOURCE", "TRIGGERED BY", "FIRE", "STARTED", "DURATION", "RESULT", "HOST", "TASK", "CAUSE"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "%d of %d execution(s)\n", len(rows), page.Total)
	return nil
}

// timeArg turns a duration ago (30m, 1h30m, 2d) into an RFC 3339 time;
// anything else goes to the API as written (which checks times).
func (c *cli) timeArg(flag, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	d, err := parseAgo(v)
	if err != nil {
		return "", usagef("history: %s %q: %v", flag, v, err)
	}
	if d < 0 {
		return v, nil // not a duration: a time
	}
	return c.now().Add(-d).Format(time.RFC3339), nil
}

// parseAgo reads a duration with Go's units plus d (days); -1 and no
// error when v is not a duration at all (a time, say).
func parseAgo(v string) (time.Duration, error) {
	s := v
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return -1, nil
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			if n < 0 {
				return 0, errors.New("a duration ago must not be negative")
			}
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if days != 0 {
			return 0, fmt.Errorf("not a duration like 2d12h: %v", err)
		}
		return -1, nil
	}
	if d < 0 || days < 0 {
		return 0, errors.New("a duration ago must not be negative")
	}
	return days + d, nil
}

// waitWords is a queue entry's recorded reason and why in a line: the
// holders as the API sums them up (summary), else the message ("-" when
// none is recorded yet).
func waitWords(v any) (reason, why string) {
	w, _ := v.(map[string]any)
	if w == nil {
		return "-", "-"
	}
	why = str(w["summary"])
	if why == "" {
		why = oneLine(str(w["message"]))
	}
	return str(w["reason"]), why
}

// fmtMs words a duration in milliseconds from the API ("-": none).
func fmtMs(v any) string {
	ms, ok := v.(float64)
	if !ok {
		return "-"
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second: // one unit below a second: 0ms beside 12ms, not 0s
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d >= time.Minute:
		d = d.Round(time.Second)
	}
	return d.String()
}

// checkHistoryJob refuses a history of a job the namespace neither holds
// nor has history of (a mistyped name), as logs does, rather than print
// an empty table.
func (c runGroup) checkHistoryJob(ctx context.Context, raw json.RawMessage, job string) error {
	var page struct {
		Total int `json:"total"`
	}
	if job == "" || json.Unmarshal(raw, &page) != nil || page.Total > 0 {
		return nil
	}
	var cfg map[string]any
	if err := c.client.get(ctx, jobKind.getPath(job), nil, &cfg); err != nil {
		if IsNotFound(err) {
			return fmt.Errorf("history: no job '%s' in namespace %s, nor any history of one", job, c.settings.Namespace)
		}
		return err
	}
	return nil
}

package ejctl

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// logChunk is the API's JSON answer of GET /api/job/logs/{taskId}.
type logChunk struct {
	TaskID string `json:"taskId"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Data   string `json:"data"`
}

type logsOpts struct {
	stream   string
	tail     int
	shard    int
	shardSet bool
	follow   bool
	poll     time.Duration
}

// shardTask is one task whose log is printed, with its line prefix.
type shardTask struct {
	item   int
	taskID string
	prefix string // "" when it is the only one
	offset int64  // where the next read starts
	carry  string // a line begun but not ended, held until it ends
}

func (c runGroup) logsCmd() *cobra.Command {
	var o logsOpts
	cmd := &cobra.Command{
		Use:   "logs TASK_ID|JOB",
		Short: "Print a task's stdout or stderr; for a job, every shard's (prefixed by shard), or one with --shard",
		Long: "For a task id, that task's log. For a job, the log of each shard's task: its running task, else its\n" +
			"latest in history; with several shards every line is prefixed with \"[shard N] \". --shard N picks one.\n" +
			"--tail N prints the last N lines of each (0: the whole log, up to 64 MiB).",
		Example: "  ejctl logs my_job --stream stderr\n  ejctl logs my_job --shard 2 --tail 500\n" +
			"  ejctl logs 'my_job@-@0@-@READY@-@agent@-@uuid' --follow",
		Args: exactArgs("TASK_ID|JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.stream != "stdout" && o.stream != "stderr" {
				return usagef("logs: --stream must be stdout or stderr")
			}
			if o.tail < 0 {
				return usagef("logs: --tail must be 0 (everything) or a number of lines")
			}
			o.shardSet = cmd.Flags().Changed("shard")
			return c.logs(cmd.Context(), args[0], o)
		},
		ValidArgsFunction: c.completeNames(jobKind),
	}
	f := cmd.Flags()
	f.StringVar(&o.stream, "stream", "stdout", "stdout or stderr")
	f.IntVar(&o.tail, "tail", 100, "print the last N lines of each task's log (0: all of it)")
	f.IntVar(&o.shard, "shard", 0, "for a job: only this shard's task (default: every shard's)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing what the tasks write until they end")
	f.DurationVar(&o.poll, "poll", time.Second, "with --follow: how often to read")
	return cmd
}

func (c runGroup) logs(ctx context.Context, target string, o logsOpts) error {
	var tasks []*shardTask
	if strings.Contains(target, "@-@") {
		tasks = []*shardTask{{taskID: target}}
	} else {
		var err error
		if tasks, err = c.tasksOfJob(ctx, target, o); err != nil {
			return err
		}
		for _, t := range tasks {
			fmt.Fprintf(c.env.Stderr, "shard %d: task %s\n", t.item, t.taskID)
		}
		if len(tasks) > 1 {
			fmt.Fprintf(c.env.Stderr, "(%d shards, each line prefixed by its shard; --shard N prints one)\n", len(tasks))
			for _, t := range tasks {
				t.prefix = fmt.Sprintf("[shard %d] ", t.item)
			}
		}
	}
	for _, t := range tasks {
		q := url.Values{"stream": {o.stream}, "lines": {strconv.Itoa(o.tail)}}
		if o.tail == 0 {
			q = url.Values{"stream": {o.stream}, "full": {"true"}}
		}
		var ch logChunk
		if err := c.client.get(ctx, "/api/job/logs/"+seg(t.taskID), q, &ch); err != nil {
			return err
		}
		t.offset = ch.Offset + int64(len(ch.Data))
		if err := c.printLog(t, ch.Data, !o.follow); err != nil {
			return err
		}
	}
	if !o.follow {
		return nil
	}
	return c.follow(ctx, tasks, o)
}

// printLog writes data with the task's prefix on every line; a line not
// yet ended is held back (unless final) so prefixes never land mid-line.
func (c runGroup) printLog(t *shardTask, data string, final bool) error {
	if t.prefix == "" {
		_, err := io.WriteString(c.env.Stdout, data)
		return err
	}
	text := t.carry + data
	t.carry = ""
	var b strings.Builder
	for text != "" {
		line, rest, ended := strings.Cut(text, "\n")
		if !ended && !final {
			t.carry = line
			break
		}
		b.WriteString(t.prefix + line + "\n")
		text = rest
	}
	_, err := io.WriteString(c.env.Stdout, b.String())
	return err
}

// follow prints what the tasks append until none runs and nothing more
// is written.
func (c runGroup) follow(ctx context.Context, tasks []*shardTask, o logsOpts) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.poll):
		}
		grew := false
		for _, t := range tasks {
			var ch logChunk
			q := url.Values{"stream": {o.stream}, "offset": {strconv.FormatInt(t.offset, 10)}, "length": {strconv.Itoa(1 << 20)}}
			if err := c.client.get(ctx, "/api/job/logs/"+seg(t.taskID), q, &ch); err != nil {
				return err
			}
			if ch.Data != "" {
				grew = true
				t.offset += int64(len(ch.Data))
				if err := c.printLog(t, ch.Data, false); err != nil {
					return err
				}
			}
		}
		if grew {
			continue
		}
		running, err := c.runningTaskIDs(ctx)
		if err != nil {
			return err
		}
		alive := false
		for _, t := range tasks {
			alive = alive || running[t.taskID]
		}
		if !alive {
			for _, t := range tasks {
				if err := c.printLog(t, "", true); err != nil {
					return err
				}
			}
			return nil
		}
	}
}

func (c runGroup) runningTaskIDs(ctx context.Context) (map[string]bool, error) {
	var rows []map[string]any
	if err := c.client.get(ctx, "/api/job/tasks/running", nil, &rows); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, r := range rows {
		out[str(r["taskId"])] = true
	}
	return out, nil
}

// tasksOfJob picks a task per shard of a job (or the one --shard names):
// its running task, else its latest execution in history.
func (c runGroup) tasksOfJob(ctx context.Context, job string, o logsOpts) ([]*shardTask, error) {
	var cfg struct {
		ShardingTotalCount int `json:"shardingTotalCount"`
	}
	if err := c.client.get(ctx, jobKind.getPath(job), nil, &cfg); err != nil {
		return nil, err
	}
	if o.shardSet && (o.shard < 0 || o.shard >= cfg.ShardingTotalCount) {
		return nil, refusef("logs: job %s has shards 0 to %d; --shard %d is none of them", job, cfg.ShardingTotalCount-1, o.shard)
	}
	want := func(item int) bool { return item < cfg.ShardingTotalCount && (!o.shardSet || item == o.shard) }
	byItem := map[int]string{}
	var rows []map[string]any
	if err := c.client.get(ctx, "/api/job/tasks/running", nil, &rows); err != nil {
		return nil, err
	}
	for _, r := range rows {
		item, _ := r["shardingItem"].(float64)
		if r["jobName"] == job && want(int(item)) && r["retiring"] != true { // a shard's current task, not its retiring one
			byItem[int(item)] = str(r["taskId"])
		}
	}
	wanted := cfg.ShardingTotalCount
	if o.shardSet {
		wanted = 1
	}
	if len(byItem) < wanted { // the shards not running: their latest task in history
		if err := c.latestInHistory(ctx, job, cfg.ShardingTotalCount, o, want, byItem); err != nil {
			return nil, err
		}
	}
	items := make([]int, 0, len(byItem))
	for it := range byItem {
		items = append(items, it)
	}
	sort.Ints(items)
	out := make([]*shardTask, len(items))
	for i, it := range items {
		out[i] = &shardTask{item: it, taskID: byItem[it]}
	}
	return out, nil
}

// latestInHistory adds the newest execution in history of each wanted
// shard byItem lacks. History is written behind the registry (the trace
// writer's spool), so a run that has just ended may not be there yet:
// when no shard has a task at all it asks again for a few seconds before
// saying there is none.
func (c runGroup) latestInHistory(ctx context.Context, job string, shards int, o logsOpts, want func(int) bool, byItem map[int]string) error {
	q := url.Values{"jobName": {job}, "per_page": {strconv.Itoa(min(2*shards, 1000))}, "sort": {"startTime"}, "order": {"desc"}}
	if o.shardSet {
		q.Set("shardingItem", strconv.Itoa(o.shard))
		q.Set("per_page", "1")
	}
	deadline := time.Now().Add(historyLag)
	for {
		var page struct {
			Rows []struct {
				TaskID       string `json:"taskId"`
				ShardingItem int    `json:"shardingItem"`
			} `json:"rows"`
		}
		if err := c.client.get(ctx, "/api/job/events/executions", q, &page); err != nil {
			return err
		}
		for _, r := range page.Rows {
			if _, seen := byItem[r.ShardingItem]; !seen && want(r.ShardingItem) {
				byItem[r.ShardingItem] = r.TaskID
			}
		}
		if len(byItem) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if o.shardSet {
				return fmt.Errorf("job %s: shard %d has no running task and no execution in history", job, o.shard)
			}
			return fmt.Errorf("job %s has no running task and no execution in history", job)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// historyLag bounds how long a job's last execution may take to reach
// history after its task ended.
const historyLag = 5 * time.Second

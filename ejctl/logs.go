package ejctl

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// logChunk is the API's answer of GET /api/job/logs/{taskId}.
type logChunk struct {
	TaskID string `json:"taskId"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Data   string `json:"data"`
}

type logsOpts struct {
	stream string
	tail   int64
	shard  int
	follow bool
	poll   time.Duration
}

func (c *cli) logsCmd() *cobra.Command {
	var o logsOpts
	cmd := &cobra.Command{
		Use:   "logs TASK_ID|JOB",
		Short: "Print a task's stdout or stderr; for a job, its running task's (else its last execution's)",
		Example: "  ejctl logs my_job --stream stderr\n  ejctl logs 'my_job@-@0@-@READY@-@agent@-@uuid' --follow\n" +
			"  ejctl logs my_job --shard 2 --tail 1048576",
		Args: exactArgs("TASK_ID|JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.stream != "stdout" && o.stream != "stderr" {
				return usagef("logs: --stream must be stdout or stderr")
			}
			return c.logs(cmd.Context(), args[0], o, cmd.Flags().Changed("shard"))
		},
		ValidArgsFunction: c.completeNames(jobKind),
	}
	f := cmd.Flags()
	f.StringVar(&o.stream, "stream", "stdout", "stdout or stderr")
	f.Int64Var(&o.tail, "tail", 64<<10, "print the last N bytes")
	f.IntVar(&o.shard, "shard", 0, "for a job: this shard's task (default: the lowest running shard, else the last execution)")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep printing what the task writes until it ends")
	f.DurationVar(&o.poll, "poll", time.Second, "with --follow: how often to read")
	return cmd
}

func (c *cli) logs(ctx context.Context, target string, o logsOpts, shardSet bool) error {
	taskID := target
	if !strings.Contains(target, "@-@") {
		var err error
		if taskID, err = c.taskOfJob(ctx, target, o.shard, shardSet); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stderr, "task %s\n", taskID)
	}
	path := "/api/job/logs/" + seg(taskID)
	var ch logChunk
	q := url.Values{"stream": {o.stream}, "tail": {strconv.FormatInt(o.tail, 10)}}
	if err := c.client.get(ctx, path, q, &ch); err != nil {
		return err
	}
	if _, err := io.WriteString(c.env.Stdout, ch.Data); err != nil || !o.follow {
		return err
	}
	return c.follow(ctx, path, taskID, o, ch.Offset+int64(len(ch.Data)))
}

// follow prints what the task appends until it no longer runs and
// nothing more is written.
func (c *cli) follow(ctx context.Context, path, taskID string, o logsOpts, offset int64) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.poll):
		}
		var ch logChunk
		q := url.Values{"stream": {o.stream}, "offset": {strconv.FormatInt(offset, 10)}, "length": {strconv.Itoa(1 << 20)}}
		if err := c.client.get(ctx, path, q, &ch); err != nil {
			return err
		}
		if len(ch.Data) > 0 {
			if _, err := io.WriteString(c.env.Stdout, ch.Data); err != nil {
				return err
			}
			offset += int64(len(ch.Data))
			continue
		}
		running, err := c.taskRunning(ctx, taskID)
		if err != nil {
			return err
		}
		if !running {
			return nil
		}
	}
}

func (c *cli) taskRunning(ctx context.Context, taskID string) (bool, error) {
	var rows []map[string]any
	if err := c.client.get(ctx, "/api/job/tasks/running", nil, &rows); err != nil {
		return false, err
	}
	for _, r := range rows {
		if r["taskId"] == taskID {
			return true, nil
		}
	}
	return false, nil
}

// taskOfJob picks a job's task: a running one (the shard asked for, or the
// lowest), else the last execution in history.
func (c *cli) taskOfJob(ctx context.Context, job string, shard int, shardSet bool) (string, error) {
	var rows []map[string]any
	if err := c.client.get(ctx, "/api/job/tasks/running", nil, &rows); err != nil {
		return "", err
	}
	best, bestItem := "", -1
	for _, r := range rows {
		item, _ := r["shardingItem"].(float64)
		if r["jobName"] != job || (shardSet && int(item) != shard) {
			continue
		}
		if bestItem < 0 || int(item) < bestItem {
			best, bestItem = str(r["taskId"]), int(item)
		}
	}
	if best != "" {
		return best, nil
	}
	q := url.Values{"jobName": {job}, "per_page": {"1"}, "sort": {"startTime"}, "order": {"desc"}}
	if shardSet {
		q.Set("shardingItem", strconv.Itoa(shard))
	}
	// History is written behind the registry (the trace writer's spool),
	// so a run that has just ended may not be there yet: ask again for a
	// few seconds before saying there is none.
	deadline := time.Now().Add(historyLag)
	for {
		var page struct {
			Rows []struct {
				TaskID string `json:"taskId"`
			} `json:"rows"`
		}
		if err := c.client.get(ctx, "/api/job/events/executions", q, &page); err != nil {
			return "", err
		}
		if len(page.Rows) > 0 {
			return page.Rows[0].TaskID, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("job %s has no running task and no execution in history", job)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// historyLag bounds how long a job's last execution may take to reach
// history after its task ended.
const historyLag = 5 * time.Second

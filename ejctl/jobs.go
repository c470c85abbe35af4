package ejctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejcloud/elasticjob/task"
)

func (c runGroup) jobCmd() *cobra.Command {
	cmd := group("job", "Jobs: list, show, register, trigger, stop a run, delete, disable, enable")
	cmd.AddCommand(objectGroup{c.cli}.objectCmds(jobKind)...)
	cmd.AddCommand(c.registerCmd(), c.triggerCmd(), c.killCmd(), tenancyGroup{c.cli}.nextCmd())
	return cmd
}

func (c runGroup) registerCmd() *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:     "register -f FILE…",
		Short:   "Register the jobs of YAML or JSON files (new jobs only; apply also updates)",
		Example: "  ejctl job register -f my_job.yaml",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usagef("register: name the files with -f FILE")
			}
			m, err := LoadManifests(files)
			if err != nil {
				return err
			}
			if len(m.Apps) > 0 {
				return usagef("register: the files declare apps (%s); use ejctl apply for apps", m.Apps[0].AppName)
			}
			for _, j := range m.Jobs {
				if err := c.client.sendJSON(cmd.Context(), http.MethodPost, "/api/job/register", j, nil); err != nil {
					return err
				}
				c.say("job %s registered", j.JobName)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a YAML or JSON file, or a directory of them (repeatable)")
	return cmd
}

// triggerOpts are the flags of job trigger.
type triggerOpts struct {
	param, key    string
	paramSet      bool
	wait          bool
	timeout, poll time.Duration
}

func (c runGroup) triggerCmd() *cobra.Command {
	var o triggerOpts
	cmd := &cobra.Command{
		Use:   "trigger NAME [--param P] [--wait]",
		Short: "Run a TRANSIENT job now; --wait waits for the run and fails when a shard failed",
		Long: "Trigger queues one execution of a TRANSIENT job. With --param the execution runs with that\n" +
			"jobParameter. --key (or --wait, which makes one up) sends an idempotency key: a retried trigger with\n" +
			"the same key queues nothing more. --wait follows that run (GET /api/job/trigger/KEY) until its\n" +
			"shards end: exit 0 when every shard finished, 3 when one failed or the run was cancelled, 4 when\n" +
			"--timeout passed first.",
		Example: "  ejctl job trigger nightly_report --param date=2026-11-01 --wait --timeout 30m",
		Args:    exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paramSet = cmd.Flags().Changed("param")
			return c.trigger(cmd.Context(), args[0], o)
		},
		ValidArgsFunction: c.completeNames(jobKind),
	}
	f := cmd.Flags()
	f.StringVar(&o.param, "param", "", "jobParameter of this execution")
	f.StringVar(&o.key, "key", "", "idempotency key (letters, digits, . _ : -; at most 128)")
	f.BoolVar(&o.wait, "wait", false, "wait for the run's shards to end; exit 3 if one failed, 5 if it can never start (never_fits)")
	f.DurationVar(&o.timeout, "timeout", 30*time.Minute, "with --wait: give up after this long (exit 4); a run that can never fit the cluster stops at once (exit 5)")
	f.DurationVar(&o.poll, "poll", time.Second, "with --wait: how often to ask")
	return cmd
}

func (c runGroup) trigger(ctx context.Context, name string, o triggerOpts) error {
	own := o.wait && o.key == ""
	if own {
		o.key = newKey()
	}
	body := map[string]any{"jobName": name}
	if o.paramSet {
		body["jobParameter"] = o.param
	}
	if o.key != "" {
		body["idempotencyKey"] = o.key
	}
	var ans struct {
		Duplicate bool `json:"duplicate"`
	}
	send := c.client.sendJSON // a keyed trigger sent again runs once
	if o.key == "" {
		send = c.client.sendJSONOnce
	}
	if err := send(ctx, http.MethodPost, "/api/job/trigger", body, &ans); err != nil {
		return err
	}
	// ejctl's own key was used only by this trigger's earlier try, answered
	// 503 though it went through: that try queued the run.
	ans.Duplicate = ans.Duplicate && !own
	if !o.wait {
		if c.json() {
			return c.printJSON(map[string]any{"jobName": name, "idempotencyKey": o.key, "queued": !ans.Duplicate, "duplicate": ans.Duplicate})
		}
		if ans.Duplicate {
			c.say("job %s: the key %s was already used by an earlier trigger (in the last 24 hours): nothing more queued", name, o.key)
		} else {
			c.say("job %s triggered", name)
		}
		return nil
	}
	if ans.Duplicate {
		fmt.Fprintf(c.env.Stderr, "job %s: the key %s was already used by an earlier trigger, so nothing more was queued; following the run it queued\n", name, o.key)
	} else {
		fmt.Fprintf(c.env.Stderr, "job %s triggered (key %s); waiting for its run\n", name, o.key)
	}
	return c.waitRun(ctx, o)
}

func newKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "ejctl-" + hex.EncodeToString(b[:])
}

// runView is the answer of GET /api/job/trigger/{key}.
type runView struct {
	IdempotencyKey string `json:"idempotencyKey"`
	JobName        string `json:"jobName"`
	State          string `json:"state"`
	Message        string `json:"message"`
	Running        []struct {
		ShardingItem int    `json:"shardingItem"`
		TaskID       string `json:"taskId"`
		State        string `json:"state"`
	} `json:"running"`
	Shards []struct {
		ShardingItem int    `json:"shardingItem"`
		TaskID       string `json:"taskId"`
		State        string `json:"state"`
		Message      string `json:"message"`
	} `json:"shards"`
	Waiting *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Summary string `json:"summary"`
	} `json:"waiting"`
}

// waitNeverFits is the wait reason of a run larger than the whole
// cluster (queue.WaitTooLarge).
const waitNeverFits = "never_fits"

var errTimedOut = errors.New("timed out")

// waitRun polls the trigger's run until it ends or the timeout passes.
func (c runGroup) waitRun(ctx context.Context, o triggerOpts) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	last, lastNote := "", ""
	told := map[string]bool{} // shard outcomes printed: item/task/state
	for {
		var v runView
		err := c.client.get(ctx, "/api/job/trigger/"+seg(o.key), nil, &v)
		if ctx.Err() != nil {
			return &exitError{code: ExitTimedOut, err: fmt.Errorf("run %s did not end within %v (last state %s)", o.key, o.timeout, orDash(last))}
		}
		if err != nil {
			return err
		}
		c.tellShards(o.key, v, told)
		if now := v.State + waitingNote(v); now != lastNote {
			fmt.Fprintf(c.env.Stderr, "run %s: %s%s\n", o.key, now, runningNote(v))
			last, lastNote = v.State, now
		}
		switch {
		case v.State == "SUCCEEDED", v.State == "FAILED", v.State == "CANCELLED":
			return c.reportRun(v)
		case v.State == "QUEUED" && v.Waiting != nil && v.Waiting.Reason == waitNeverFits:
			if c.json() {
				if err := c.printJSON(v); err != nil {
					return err
				}
			}
			return &exitError{code: ExitNeverFits, err: fmt.Errorf("run %s of job %s can never start (%s): %s; ejctl stops waiting (the run stays queued until the cluster grows or the job is changed)",
				o.key, v.JobName, waitNeverFits, oneLine(v.Waiting.Message))}
		}
		select {
		case <-ctx.Done():
			return &exitError{code: ExitTimedOut, err: fmt.Errorf("run %s did not end within %v (last state %s)", o.key, o.timeout, orDash(last))}
		case <-time.After(o.poll):
		}
	}
}

// waitingNote says why a queued run waits.
func waitingNote(v runView) string {
	if v.State != "QUEUED" || v.Waiting == nil {
		return ""
	}
	why := v.Waiting.Summary
	if why == "" {
		why = v.Waiting.Message
	}
	return fmt.Sprintf(": waiting (%s): %s", v.Waiting.Reason, oneLine(why))
}

func runningNote(v runView) string {
	note := ""
	if len(v.Running) > 0 {
		note = fmt.Sprintf(" (%d shard(s) running)", len(v.Running))
	}
	if v.Message != "" {
		note += ": " + oneLine(v.Message)
	}
	return note
}

// tellShards prints each shard's end once, as it happens (a failure with
// its cause), on stderr.
func (c runGroup) tellShards(key string, v runView, told map[string]bool) {
	for _, s := range v.Shards {
		id := fmt.Sprintf("%d/%s/%s", s.ShardingItem, s.TaskID, s.State)
		if told[id] {
			continue
		}
		told[id] = true
		line := fmt.Sprintf("run %s: shard %d %s (task %s)", key, s.ShardingItem, s.State, s.TaskID)
		if s.Message != "" {
			line += ": " + oneLine(s.Message)
		}
		fmt.Fprintln(c.env.Stderr, line)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// reportRun prints how the run's shards ended and fails unless all
// finished.
func (c runGroup) reportRun(v runView) error {
	if c.json() {
		if err := c.printJSON(v); err != nil {
			return err
		}
	} else if len(v.Shards) > 0 {
		rows := make([][]string, len(v.Shards))
		for i, s := range v.Shards {
			rows[i] = []string{fmt.Sprint(s.ShardingItem), s.State, s.TaskID, oneLine(s.Message)}
		}
		if err := c.table([]string{"SHARD", "STATE", "TASK", "MESSAGE"}, rows); err != nil {
			return err
		}
	}
	switch v.State {
	case "SUCCEEDED":
		return nil
	case "CANCELLED":
		return &exitError{code: ExitRunFail, err: fmt.Errorf("run %s of job %s was cancelled: %s", v.IdempotencyKey, v.JobName, v.Message)}
	}
	return &exitError{code: ExitRunFail, err: fmt.Errorf("run %s of job %s failed: %s", v.IdempotencyKey, v.JobName, shardCounts(v))}
}

// shardCounts counts a failed run's shards by item, each once: a shard
// that failed and runs again by failover is a failed one (the run failed
// with it), not a second running one.
func shardCounts(v runView) string {
	items, failed := map[int]bool{}, map[int]bool{}
	for _, s := range v.Shards {
		items[s.ShardingItem] = true
		if task.State(s.State) != task.Finished {
			failed[s.ShardingItem] = true
		}
	}
	running, again := 0, 0
	for _, r := range v.Running {
		items[r.ShardingItem] = true
		if failed[r.ShardingItem] {
			again++
		} else {
			running++
		}
	}
	out := fmt.Sprintf("%d of %d %s failed", len(failed), len(items), plural(len(items), "shard", "shards"))
	if running > 0 {
		out += fmt.Sprintf("; %d still running", running)
	}
	if again > 0 {
		out += fmt.Sprintf("; %d failed %s running again by failover", again, plural(again, "one is", "ones are"))
	}
	if running+again > 0 {
		out += " (the run cannot succeed, so ejctl stops waiting)"
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func oneLine(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ⏎ ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

func (c runGroup) killCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "kill NAME",
		Short: "Stop the job's running execution (all its shards) and keep the job",
		Long: "Kill stops the job's running execution: its shards are killed and end \"killed by ejctl:USER\" in history,\n" +
			"its shards waiting to run again are dropped; the job stays enabled, with its pending executions and\n" +
			"its cron. It asks for confirmation on a terminal; scripts pass --yes.",
		Example:           "  ejctl job kill nightly_report --yes",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: c.completeNames(jobKind),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !yes {
				if !c.stdinTTY() {
					return refusef("kill: this stops the running execution of job %s; pass --yes to confirm (standard input is not a terminal to ask on)", name)
				}
				ok, err := c.confirm(fmt.Sprintf("Stop the running execution of job %s? [y/N] ", name))
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not confirmed: nothing stopped")
				}
			}
			var ans struct {
				KilledBy      string   `json:"killedBy"`
				TaskIDs       []string `json:"taskIds"`
				DroppedShards int      `json:"droppedShards"`
			}
			if err := c.client.sendJSON(cmd.Context(), http.MethodPost, "/api/job/"+seg(name)+"/kill", nil, &ans); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(ans)
			}
			c.say("job %s: stopped its running execution (%d task(s) killed, %d shard(s) waiting to run again dropped), as %s",
				name, len(ans.TaskIDs), ans.DroppedShards, ans.KilledBy)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "stop without asking (required when standard input is not a terminal)")
	return cmd
}

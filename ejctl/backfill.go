package ejctl

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// backfillView is a backfill as the API shows it.
type backfillView struct {
	ID          string      `json:"id"`
	JobName     string      `json:"jobName"`
	Workflow    string      `json:"workflowName"`
	From        time.Time   `json:"from"`
	To          time.Time   `json:"to"`
	Concurrency int         `json:"concurrency"`
	State       string      `json:"state"`
	InFlight    []time.Time `json:"inFlight"`
	Failures    []time.Time `json:"failedInstants"`
	Progress    struct {
		Done      int `json:"done"`
		Running   int `json:"running"`
		Remaining int `json:"remaining"`
		Failed    int `json:"failed"`
		Skipped   int `json:"skipped"`
		Total     int `json:"total"`
	} `json:"progress"`
	CreatedBy string `json:"createdBy"`
}

func (c runGroup) backfillCmd() *cobra.Command {
	cmd := group("backfill", "Run a job (or a workflow) once for every instant of its schedule in a past range, each run handed its instant (ELASTICJOB_SCHEDULED_TIME): start, ls, get, rerun, pause, resume, cancel")
	cmd.Aliases = []string{"backfills"}
	cmd.AddCommand(c.backfillStartCmd(), c.backfillLsCmd(), c.backfillGetCmd(), c.backfillRerunCmd())
	for _, a := range []struct{ name, short, done string }{
		{"pause", "Queue no more of its runs (those in flight finish)", "paused"},
		{"resume", "Queue its runs again", "resumed"},
		{"cancel", "Stop it for good (runs in flight finish)", "cancelled"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use: a.name + " ID", Short: a.short, Args: exactArgs("ID"),
			RunE: func(cmd *cobra.Command, args []string) error {
				var v backfillView
				if err := c.client.sendJSON(cmd.Context(), http.MethodPost, "/api/job/backfills/"+seg(args[0])+"/"+a.name, nil, &v); err != nil {
					return err
				}
				return c.showBackfill(v, a.done)
			},
		})
	}
	return cmd
}

// backfillStartCmd: ejctl backfill start NAME --from TIME --to TIME [--workflow].
func (c runGroup) backfillStartCmd() *cobra.Command {
	var from, to string
	var conc, maxRuns int
	var isWorkflow bool
	start := &cobra.Command{
		Use:   "start NAME --from TIME --to TIME [--workflow]",
		Short: "Backfill job NAME (workflow NAME with --workflow) over [from, to) (RFC 3339 times, to not after now); --concurrency bounds its runs in flight",
		Example: "  ejctl backfill start daily_report --from 2026-10-01T00:00:00Z --to 2026-11-01T00:00:00Z --concurrency 2\n" +
			"  ejctl backfill start --workflow nightly_etl --from 2026-10-01T00:00:00Z --to 2026-11-01T00:00:00Z",
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return errors.New("--from and --to are required (RFC 3339, e.g. 2026-10-01T00:00:00Z)")
			}
			f, err := time.Parse(time.RFC3339, from)
			if err != nil {
				return errors.New("--from: " + err.Error())
			}
			t, err := time.Parse(time.RFC3339, to)
			if err != nil {
				return errors.New("--to: " + err.Error())
			}
			var v backfillView
			in := map[string]any{"jobName": args[0], "from": f, "to": t, "concurrency": conc, "maxRuns": maxRuns}
			if isWorkflow {
				delete(in, "jobName")
				in["workflowName"] = args[0]
			}
			if err := c.client.sendJSONOnce(cmd.Context(), http.MethodPost, "/api/job/backfills", in, &v); err != nil {
				return err
			}
			return c.showBackfill(v, "started")
		},
	}
	start.Flags().StringVar(&from, "from", "", "the range's start, inclusive (RFC 3339)")
	start.Flags().StringVar(&to, "to", "", "the range's end, exclusive (RFC 3339)")
	start.Flags().IntVar(&conc, "concurrency", 1, "at most this many of its runs waiting or running at once")
	start.Flags().BoolVar(&isWorkflow, "workflow", false, "NAME is a workflow: one workflow run per instant")
	start.Flags().IntVar(&maxRuns, "max-runs", 0, "confirm a range of more than 1000 runs: start it only if it holds at most this many")
	return start
}

// backfillLsCmd: ejctl backfill ls.
func (c runGroup) backfillLsCmd() *cobra.Command {
	var job, wf string
	ls := &cobra.Command{
		Use: "ls", Aliases: []string{"list"}, Short: "The namespace's backfills, newest first", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.backfills(cmd.Context(), job, wf) },
	}
	ls.Flags().StringVar(&job, "job", "", "only this job's")
	ls.Flags().StringVar(&wf, "workflow", "", "only this workflow's")
	return ls
}

// backfillGetCmd: ejctl backfill get ID.
func (c runGroup) backfillGetCmd() *cobra.Command {
	get := &cobra.Command{
		Use: "get ID", Short: "One backfill and its progress", Args: exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v backfillView
			if err := c.client.get(cmd.Context(), "/api/job/backfills/"+seg(args[0]), nil, &v); err != nil {
				return err
			}
			return c.showBackfill(v, "")
		},
	}
	return get
}

// backfillRerunCmd: ejctl backfill rerun ID.
func (c runGroup) backfillRerunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rerun ID",
		Short: "Backfill a job backfill's range again: the instants that failed (or were lost) run again, those that succeeded are skipped",
		Args:  exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var old backfillView
			if err := c.client.get(cmd.Context(), "/api/job/backfills/"+seg(args[0]), nil, &old); err != nil {
				return err
			}
			if old.Workflow != "" {
				return errors.New("backfill " + old.ID + " is a workflow's: a workflow's instant runs once per backfill; start a backfill of its failed instants' range with a new one after the first is forgotten")
			}
			in := map[string]any{"jobName": old.JobName, "from": old.From, "to": old.To, "concurrency": old.Concurrency, "maxRuns": old.Progress.Total}
			var v backfillView
			if err := c.client.sendJSONOnce(cmd.Context(), http.MethodPost, "/api/job/backfills", in, &v); err != nil {
				return err
			}
			return c.showBackfill(v, "started (re-running the failed instants of "+old.ID+")")
		},
	}
}

func (c runGroup) showBackfill(v backfillView, did string) error {
	if c.json() {
		return c.printJSON(v)
	}
	if did != "" {
		if v.Workflow != "" {
			c.say("backfill %s of workflow %s %s", v.ID, v.Workflow, did)
		} else {
			c.say("backfill %s of job %s %s", v.ID, v.JobName, did)
		}
	}
	if err := c.table(backfillHeader, [][]string{backfillRow(v)}); err != nil {
		return err
	}
	if len(v.Failures) > 0 {
		c.say("failed instants (%d):", len(v.Failures))
		for _, at := range v.Failures {
			c.say("  %s", at.UTC().Format(time.RFC3339))
		}
		if v.Workflow == "" {
			c.say("run them again: ejctl backfill rerun %s", v.ID)
		}
	}
	return nil
}

var backfillHeader = []string{"ID", "JOB", "FROM", "TO", "STATE", "DONE", "RUNNING", "REMAINING", "FAILED", "SKIPPED", "TOTAL"}

func backfillRow(v backfillView) []string {
	p := v.Progress
	name := v.JobName
	if v.Workflow != "" {
		name = "workflow:" + v.Workflow
	}
	return []string{v.ID, name, v.From.UTC().Format(time.RFC3339), v.To.UTC().Format(time.RFC3339), v.State,
		strconv.Itoa(p.Done), strconv.Itoa(p.Running), strconv.Itoa(p.Remaining), strconv.Itoa(p.Failed), strconv.Itoa(p.Skipped), strconv.Itoa(p.Total)}
}

func (c runGroup) backfills(ctx context.Context, job, wf string) error {
	q := url.Values{}
	if job != "" {
		q.Set("jobName", job)
	}
	if wf != "" {
		q.Set("workflowName", wf)
	}
	var all []backfillView
	if err := c.client.get(ctx, "/api/job/backfills", q, &all); err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(all)
	}
	rows := make([][]string, 0, len(all))
	for _, v := range all {
		rows = append(rows, backfillRow(v))
	}
	return c.table(backfillHeader, rows)
}

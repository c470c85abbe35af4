package ejctl

import (
	"context"
	"net/url"

	"github.com/spf13/cobra"
)

func (c runGroup) deadlinesCmd() *cobra.Command {
	var job string
	cmd := &cobra.Command{
		Use:     "deadlines",
		Short:   "List the deadlines missed by work still waiting or running (startDeadlineSeconds, runDeadlineSeconds, runDeadlineAt)",
		Example: "  ejctl deadlines\n  ejctl deadlines --job daily_report -o json",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.deadlines(cmd.Context(), job) },
	}
	cmd.Flags().StringVar(&job, "job", "", "only this job's")
	return cmd
}

func (c runGroup) deadlines(ctx context.Context, job string) error {
	q := url.Values{}
	if job != "" {
		q.Set("jobName", job)
	}
	var rows []map[string]any
	if err := c.client.get(ctx, "/api/job/deadlines", q, &rows); err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(rows)
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		what := str(r["jobName"])
		if r["workflow"] != nil {
			what = "workflow " + str(r["workflow"]) + " run " + str(r["runId"])
		}
		out = append(out, []string{what, str(r["kind"]), since(r["due"]), str(r["message"])})
	}
	return c.table([]string{"JOB", "KIND", "DUE", "MESSAGE"}, out)
}

package ejctl

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// taskFile is one entry of GET /api/job/tasks/{taskId}/files.
type taskFile struct {
	Path  string    `json:"path"`
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"`
	MTime time.Time `json:"mtime"`
}

// taskCmd is "task files" and "task download": what a task wrote in its
// directory ($ELASTICJOB_TASK_DIR is its work/).
func (c runGroup) taskCmd() *cobra.Command {
	cmd := group("task", "A task's files: list them, download one")
	files := &cobra.Command{
		Use:     "files TASK_ID [DIR]",
		Short:   "List a task's directory (stdout, stderr, work/), or DIR below it",
		Example: "  ejctl task files 'my_job@-@0@-@READY@-@agent@-@uuid' work",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 2 {
				dir = args[1]
			}
			return c.taskFiles(cmd.Context(), args[0], dir)
		},
	}
	var to string
	download := &cobra.Command{
		Use:     "download TASK_ID PATH",
		Short:   "Download a file of a task's directory (into the current directory, or --to FILE; --to - prints it)",
		Example: "  ejctl task download 'my_job@-@0@-@READY@-@agent@-@uuid' work/report.txt",
		Args:    exactArgs("TASK_ID", "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.taskDownload(cmd.Context(), args[0], args[1], to)
		},
	}
	download.Flags().StringVar(&to, "to", "", "write it here (default: its name in the current directory; -: standard output)")
	cmd.AddCommand(files, download)
	return cmd
}

func (c runGroup) taskFiles(ctx context.Context, taskID, dir string) error {
	var got struct {
		Files []taskFile `json:"files"`
	}
	q := url.Values{}
	if dir != "" {
		q.Set("path", dir)
	}
	if err := c.client.get(ctx, "/api/job/tasks/"+url.PathEscape(taskID)+"/files", q, &got); err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(got.Files)
	}
	rows := make([][]string, 0, len(got.Files))
	for _, f := range got.Files {
		rows = append(rows, []string{f.Mode, strconv.FormatInt(f.Size, 10), f.MTime.Local().Format(time.DateTime), f.Path})
	}
	return c.table([]string{"MODE", "SIZE", "MODIFIED", "PATH"}, rows)
}

func (c runGroup) taskDownload(ctx context.Context, taskID, file, to string) error {
	var out io.Writer = c.env.Stdout
	if to != "-" {
		if to == "" {
			to = path.Base(file)
		}
		f, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	var n int64
	err := c.client.call(ctx, request{method: http.MethodGet, path: "/api/job/tasks/" + url.PathEscape(taskID) + "/files/download",
		query: url.Values{"path": {file}}, noTimeout: true, sink: func(body io.Reader) error {
			var err error
			n, err = io.Copy(out, body)
			return err
		}}, nil)
	if err != nil {
		if to != "-" {
			_ = os.Remove(to)
		}
		return err
	}
	if to != "-" {
		c.say("%s: %d bytes\n", to, n)
	}
	return nil
}

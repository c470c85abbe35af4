package ejctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
)

func (c objectGroup) removeCmd(k kind, complete func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)) *cobra.Command {
	var yes, force bool
	short := "Delete " + k.name + "s (running tasks are killed)"
	if k.name == "app" {
		short = "Delete apps and every job that uses them (running tasks are killed)"
	}
	cmd := &cobra.Command{
		Use: "rm NAME…", Aliases: []string{"delete"}, Short: short, ValidArgsFunction: complete,
		Long: short + ".\nIt says what goes and asks for confirmation on a terminal; scripts pass --yes.\n" +
			"One that a workflow runs (as one of its nodes) is refused, naming the workflows; --force deletes it\n" +
			"anyway and names the workflows whose next runs then fail.",
		RunE: func(cmd *cobra.Command, names []string) error {
			if len(names) == 0 {
				return usagef("rm: name at least one %s", k.name)
			}
			return c.remove(cmd.Context(), k, names, yes, force)
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking (required when standard input is not a terminal)")
	cmd.Flags().BoolVar(&force, "force", false, "delete even what workflows run (their next runs fail)")
	return cmd
}

// remove says what goes, asks (or takes --yes), then deletes each name.
func (c objectGroup) remove(ctx context.Context, k kind, names []string, yes, force bool) error {
	goes := make([]string, len(names))
	gone := map[string]bool{} // the jobs deleted
	for i, n := range names {
		what, its, err := c.whatGoes(ctx, k, n)
		if err != nil {
			return err
		}
		goes[i] = what
		for _, j := range its {
			gone[j] = true
		}
	}
	summary := strings.Join(goes, "; ")
	if !yes {
		running, err := c.runningOf(ctx, gone)
		if err != nil {
			return err
		}
		whose := "their"
		if len(gone) == 1 {
			whose = "its"
		}
		if !c.stdinTTY() {
			kills := ""
			if running > 0 {
				kills = fmt.Sprintf(", killing %s %d running %s", whose, running, plural(running, "task", "tasks"))
			}
			return refusef("rm: this deletes %s%s; pass --yes to confirm (standard input is not a terminal to ask on)", summary, kills)
		}
		note := "Nothing of it runs now (a task that starts first is killed)."
		if len(gone) > 1 {
			note = "Nothing of theirs runs now (a task that starts first is killed)."
		}
		if running > 0 {
			note = fmt.Sprintf("%s %d running %s killed.", strings.ToUpper(whose[:1])+whose[1:], running, plural(running, "task is", "tasks are"))
		}
		ok, err := c.confirm(fmt.Sprintf("Delete %s? %s [y/N] ", summary, note))
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not confirmed: nothing deleted")
		}
	}
	del := c.deleteOne(force)
	for i, n := range names {
		if err := del(ctx, k, n); err != nil {
			return err
		}
		c.say("deleted %s", goes[i])
	}
	return nil
}

// runningOf counts the running tasks of the jobs named.
func (c objectGroup) runningOf(ctx context.Context, jobs map[string]bool) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	var rows []map[string]any
	if err := c.client.get(ctx, "/api/job/tasks/running", nil, &rows); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if jobs[str(r["jobName"])] {
			n++
		}
	}
	return n, nil
}

// whatGoes names what deleting one app or job removes, and the jobs that
// go: an app takes its jobs with it. An unknown name is the API's 404.
func (c objectGroup) whatGoes(ctx context.Context, k kind, name string) (string, []string, error) {
	if err := c.client.get(ctx, k.getPath(name), nil, nil); err != nil {
		return "", nil, err
	}
	if k.name != "app" {
		return "job " + name, []string{name}, nil
	}
	var jobs []map[string]any
	if err := c.client.get(ctx, jobKind.listPath, nil, &jobs); err != nil {
		return "", nil, err
	}
	var its []string
	for _, j := range jobs {
		if j["appName"] == name {
			its = append(its, str(j["jobName"]))
		}
	}
	switch len(its) {
	case 0:
		return "app " + name + " (no job uses it)", its, nil
	case 1:
		return "app " + name + " and its job " + its[0], its, nil
	}
	return fmt.Sprintf("app %s and its %d jobs %s", name, len(its), strings.Join(its, ", ")), its, nil
}

// confirm asks on stderr and reads one answer line from stdin.
func (c *cli) confirm(question string) (bool, error) {
	fmt.Fprint(c.env.Stderr, question)
	line, err := bufio.NewReader(c.env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(c.env.Stderr) // the terminal closed (end of input): no answer is a no
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("read the answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// deleteOne deletes one app or job (?force=true with force). A refusal
// because workflows run it says how to force it from here; a forced delete
// that broke workflows warns on stderr with the scheduler's message.
func (c objectGroup) deleteOne(force bool) func(context.Context, kind, string) error {
	return func(ctx context.Context, k kind, name string) error {
		var q url.Values
		if force {
			q = url.Values{"force": {"true"}}
		}
		var ans struct {
			Message string `json:"message"`
		}
		err := c.client.call(ctx, request{method: http.MethodDelete, path: k.delPath(name), query: q}, &ans)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			ae.Message = strings.Replace(ae.Message, "repeat with ?force=true", "repeat with ejctl "+k.name+" rm --force", 1)
		}
		if err == nil && ans.Message != "" {
			fmt.Fprintln(c.env.Stderr, "warning: "+ans.Message)
		}
		return err
	}
}

package ejctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
)

// kind describes apps or jobs for the commands they share.
type kind struct {
	name      string // "app" or "job"
	nameField string // "appName" or "jobName"
	listPath  string
	getPath   func(string) string
	delPath   func(string) string
	basePath  func(string) string // …/disable and …/enable hang below it
	headers   []string
	row       func(map[string]any) []string
}

var appKind = kind{
	name: "app", nameField: "appName", listPath: "/api/app/list",
	getPath:  func(n string) string { return "/api/app/" + seg(n) },
	delPath:  func(n string) string { return "/api/app/" + seg(n) },
	basePath: func(n string) string { return "/api/app/" + seg(n) },
	headers:  []string{"NAME", "URL", "BOOTSTRAP", "CPU", "MEM(MB)", "STATE"},
	row: func(m map[string]any) []string {
		return []string{str(m["appName"]), str(m["appURL"]), str(m["bootstrapScript"]), str(m["cpuCount"]), str(m["memoryMB"]), stateOf(m)}
	},
}

var jobKind = kind{
	name: "job", nameField: "jobName", listPath: "/api/job/jobs",
	getPath:  func(n string) string { return "/api/job/jobs/" + seg(n) },
	delPath:  func(n string) string { return "/api/job/" + seg(n) + "/deregister" },
	basePath: func(n string) string { return "/api/job/" + seg(n) },
	headers:  []string{"NAME", "APP", "TYPE", "CRON", "SHARDS", "CPU", "MEM(MB)", "STATE"},
	row: func(m map[string]any) []string {
		cron := str(m["cron"])
		if cron == "" {
			cron = "-"
		}
		return []string{str(m["jobName"]), str(m["appName"]), str(m["jobExecutionType"]), cron,
			str(m["shardingTotalCount"]), str(m["cpuCount"]), str(m["memoryMB"]), stateOf(m)}
	},
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// stateOf is "enabled", "disabled" or "paused (N failed runs)".
func stateOf(m map[string]any) string {
	if p, ok := m["pause"].(map[string]any); ok {
		return fmt.Sprintf("paused after %s failed runs", str(p["failedRuns"]))
	}
	if m["disabled"] == true {
		return "disabled"
	}
	return "enabled"
}

// objectCmds are ls, get, rm, disable and enable of a kind.
func (c objectGroup) objectCmds(k kind) []*cobra.Command {
	complete := c.completeNames(k)
	ls := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "List " + k.name + "s", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.list(cmd.Context(), k) }}
	get := &cobra.Command{Use: "get NAME", Short: "Show one " + k.name, Args: exactArgs("NAME"), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, a []string) error { return c.getOne(cmd.Context(), k, a[0]) }}
	rm := c.removeCmd(k, complete)
	dis := &cobra.Command{Use: "disable NAME…", Short: "Disable " + k.name + "s (running tasks are killed, nothing is scheduled)", ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.each(cmd.Context(), k, a, "disabled", c.toggle("disable"))
		}}
	en := &cobra.Command{Use: "enable NAME…", Short: "Enable " + k.name + "s", ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, a []string) error {
			return c.each(cmd.Context(), k, a, "enabled", c.toggle("enable"))
		}}
	return []*cobra.Command{ls, get, rm, dis, en}
}

func (c objectGroup) list(ctx context.Context, k kind) error {
	var raw json.RawMessage
	if err := c.client.get(ctx, k.listPath, nil, &raw); err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(raw)
	}
	var rows []map[string]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		return fmt.Errorf("list %ss: %w", k.name, err)
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, k.row(r))
	}
	return c.table(k.headers, out)
}

func (c objectGroup) getOne(ctx context.Context, k kind, name string) error {
	var raw json.RawMessage
	if err := c.client.get(ctx, k.getPath(name), nil, &raw); err != nil {
		return err
	}
	var status json.RawMessage
	if k.name == "job" {
		if err := c.client.get(ctx, "/api/jobs/"+seg(name)+"/status", nil, &status); err != nil {
			return err
		}
	}
	if c.json() {
		if status != nil {
			return c.printJSON(map[string]json.RawMessage{"config": raw, "status": status})
		}
		return c.printJSON(raw)
	}
	pairs, err := orderedPairs(raw)
	if err != nil {
		return err
	}
	if status != nil {
		more, err := orderedPairs(status)
		if err != nil {
			return err
		}
		for _, p := range more {
			if p[0] != "jobName" && p[0] != "shardingTotalCount" {
				pairs = append(pairs, [2]string{"status." + p[0], p[1]})
			}
		}
	}
	rows := make([][]string, len(pairs))
	for i, p := range pairs {
		rows[i] = []string{p[0] + ":", p[1]}
	}
	return c.table([]string{"FIELD", "VALUE"}, rows)
}

// orderedPairs lists a JSON object's members in their order, values as
// text (strings bare, the rest as JSON).
func orderedPairs(raw []byte) ([][2]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode the answer: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out [][2]string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		out = append(out, [2]string{key, s})
	}
	return out, nil
}

// each applies f to every name, reporting each; the first error stops.
func (c objectGroup) each(ctx context.Context, k kind, names []string, done string, f func(context.Context, kind, string) error) error {
	if len(names) == 0 {
		return usagef("%s: name at least one %s", done, k.name)
	}
	for _, n := range names {
		if err := f(ctx, k, n); err != nil {
			return err
		}
		c.say("%s %s %s", k.name, n, done)
	}
	return nil
}

func (c objectGroup) toggle(action string) func(context.Context, kind, string) error {
	return func(ctx context.Context, k kind, name string) error {
		return c.client.call(ctx, request{method: http.MethodPost, path: k.basePath(name) + "/" + action}, nil)
	}
}

// completeNames completes app or job names from the scheduler.
func (c *cli) completeNames(k kind) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if c.client == nil {
			if err := c.setup(cmd); err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		}
		var rows []map[string]any
		if err := c.client.get(cmd.Context(), k.listPath, nil, &rows); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, r := range rows {
			if n := str(r[k.nameField]); strings.HasPrefix(n, prefix) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

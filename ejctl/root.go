package ejctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitUsage    = 2
	ExitRunFail  = 3 // job trigger --wait: the run failed or was cancelled
	ExitTimedOut = 4 // job trigger --wait: --timeout passed first
	// ExitNeverFits: job trigger --wait: the run waits as never_fits
	// (larger than the whole cluster), so it cannot start until the
	// cluster grows; ejctl stops waiting at once.
	ExitNeverFits = 5
)

// Env is the process around the program.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	HTTP           *http.Client // nil: a default client
	// StderrIsTTY says whether progress bars may be drawn (nil: never).
	StderrIsTTY func() bool
	// StdinIsTTY says whether a person can be asked to confirm (nil:
	// never; destructive commands then need --yes).
	StdinIsTTY func() bool
	// Now is the clock of --since 1h and the like (nil: time.Now).
	Now func() time.Time
}

// exitError carries an exit code other than ExitFailure.
type exitError struct {
	code int
	err  error
	// refusal: a refusal that says itself what to do (pass --yes, pick
	// another shard), not a misuse of the command: no pointer to --help.
	refusal bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// refusef is a usage exit (2) for a refusal whose message says what to
// do: Run does not add "Run 'ejctl --help'" after it.
func refusef(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...), refusal: true}
}

// cli holds the global flags and what they resolve to.
type cli struct {
	env                     Env
	addr, token, configFlag string
	namespace               string
	output                  string
	requestTimeout          time.Duration
	settings                Settings
	client                  *Client
}

// Run runs ejctl with args (without the program name) and returns the
// exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	c := &cli{env: env}
	root := c.rootCmd()
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(env.Stderr, "ejctl:", err)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		if ee.code == ExitUsage && !ee.refusal {
			fmt.Fprintln(env.Stderr, "Run 'ejctl --help' for usage.")
		}
		return ee.code
	case isCobraUsage(err):
		fmt.Fprintln(env.Stderr, "Run 'ejctl --help' for usage.")
		return ExitUsage
	}
	return ExitFailure
}

// isCobraUsage recognises cobra's own argument errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func (c *cli) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "ejctl",
		Short: "Command-line client of the ElasticJob-Cloud scheduler",
		Long: "ejctl talks to the scheduler's REST API.\n\n" +
			"Address and token: --addr/--token, else EJCTL_ADDR/EJCTL_TOKEN, else the config file written by\n" +
			"'ejctl login' (--config, EJCTL_CONFIG or ~/.config/ejctl/config.json); the address defaults to " + DefaultAddr + ".\n" +
			"Namespace: -n/--namespace, else EJCTL_NAMESPACE, else the config file's ('ejctl ns use NAME'), else default.\n\n" +
			"Exit codes: 0 ok, 1 failure, 2 usage, 3 a waited run failed, 4 a wait timed out,\n" +
			"5 a waited run can never start (never_fits: larger than the whole cluster).",
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return c.setup(cmd) },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: ExitUsage, err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&c.addr, "addr", "", "scheduler address (env EJCTL_ADDR; default "+DefaultAddr+")")
	pf.StringVar(&c.token, "token", "", "API token (env EJCTL_TOKEN)")
	pf.StringVarP(&c.namespace, "namespace", "n", "", "the namespace to act in (env EJCTL_NAMESPACE; else the config file's, set by 'ejctl ns use'; default: default)")
	pf.StringVar(&c.configFlag, "config", "", "config file (env EJCTL_CONFIG; default ~/.config/ejctl/config.json)")
	pf.StringVarP(&c.output, "output", "o", "table", "output format: table or json")
	pf.DurationVar(&c.requestTimeout, "request-timeout", 30*time.Second, "time limit of each API call (uploads excepted)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	objs, runs, apps, ten, cl := objectGroup{c}, runGroup{c}, appGroup{c}, tenancyGroup{c}, clusterGroup{c}
	root.AddCommand(ten.loginCmd(), ten.logoutCmd(), ten.whoamiCmd(), apps.appCmd(), runs.jobCmd(), objs.applyCmd(), runs.tasksCmd(),
		runs.deadlinesCmd(), runs.backfillCmd(), runs.logsCmd(), runs.taskCmd(), runs.historyCmd(), ten.nsCmd(), ten.tokenCmd(), ten.secretCmd(),
		ten.calendarCmd(), apps.registryCmd(), cl.clusterCmd())
	root.InitDefaultCompletionCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "completion" {
			// cobra's completion command prints its help and exits 0 for
			// a shell it does not know: a usage error instead.
			sub.Args = cobra.ArbitraryArgs
			sub.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return usagef("completion: no shell %q: bash, zsh, fish or powershell", args[0])
				}
				return cmd.Help()
			}
		}
	}
	return root
}

// retryUnavailableFor is how long a call answered 503 (no leader at the
// moment) is sent again: longer than an election under load takes.
const retryUnavailableFor = 30 * time.Second

// setup resolves the address and token and builds the client.
func (c *cli) setup(cmd *cobra.Command) error {
	if c.output != "table" && c.output != "json" {
		return usagef("--output must be table or json, got %q", c.output)
	}
	// Without HOME (and no --config/EJCTL_CONFIG) there is no config file:
	// flags and the environment still work; login and logout say so.
	path, _ := configPath(c.configFlag, c.env.Getenv)
	var file FileConfig
	var err error
	if path != "" {
		if file, err = loadConfig(path); err != nil {
			return err
		}
	}
	c.settings = resolve(c.addr, c.token, c.namespace, c.env.Getenv, file)
	c.settings.ConfigPath = path
	hc := c.env.HTTP
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport}
	}
	c.client = &Client{Base: c.settings.Addr, Token: c.settings.Token, Namespace: c.settings.Namespace, HTTP: hc, Timeout: c.requestTimeout,
		Warn:        func(text string) { fmt.Fprintln(c.env.Stderr, "ejctl: warning:", text) },
		Retry503For: retryUnavailableFor}
	c.tokenNamespace(cmd.Context())
	return nil
}

// tokenNamespace acts, when nothing named the namespace, in the one
// namespace a namespace API token (ejn_…, from --token or EJCTL_TOKEN)
// has a role in, as login picks a user's only namespace: such a token has
// no role in default, so every call there was a 403.
func (c *cli) tokenNamespace(ctx context.Context) {
	s := &c.settings
	if s.NamespaceFrom != "default" || (s.TokenFrom != "flag" && s.TokenFrom != "env") || !strings.HasPrefix(s.Token, "ejn_") {
		return
	}
	var w whoAmI
	if err := c.client.get(ctx, "/api/whoami", nil, &w); err != nil || len(w.Namespaces) != 1 || w.Namespaces[s.Namespace] != "" {
		return
	}
	for ns := range w.Namespaces {
		s.Namespace, s.NamespaceFrom = ns, "token"
		c.client.Namespace = ns
	}
}

// json prints v indented (the -o json form).
func (c *cli) printJSON(v any) error {
	if raw, ok := v.(json.RawMessage); ok {
		var buf any
		if err := json.Unmarshal(raw, &buf); err == nil {
			v = buf
		}
	}
	enc := json.NewEncoder(c.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints rows under headers, aligned.
func (c *cli) table(headers []string, rows [][]string) error {
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func (c *cli) json() bool { return c.output == "json" }

// say prints a line for people (never in -o json mode on stdout).
func (c *cli) say(format string, args ...any) {
	w := c.env.Stdout
	if c.json() {
		w = c.env.Stderr
	}
	fmt.Fprintf(w, format+"\n", args...)
}

func (c *cli) stderrTTY() bool { return c.env.StderrIsTTY != nil && c.env.StderrIsTTY() }

func (c *cli) stdinTTY() bool { return c.env.StdinIsTTY != nil && c.env.StdinIsTTY() }

func (c *cli) now() time.Time {
	if c.env.Now != nil {
		return c.env.Now()
	}
	return time.Now()
}

// IsTerminal reports whether f is a terminal: one that answers the
// terminal's own request (termios), not merely a character device
// (/dev/null is one too, and ejctl asked it questions it could not answer).
func IsTerminal(f *os.File) bool {
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// exactArgs is cobra.ExactArgs with a usage exit code and names.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		if len(names) == 0 {
			return usagef("expected no arguments, got %d (%s)", len(args), strings.Join(args, " "))
		}
		return usagef("expected %s, got %d argument(s)", strings.Join(names, " "), len(args))
	}
}

// optionalArg accepts no argument or one, name.
func optionalArg(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 1 {
			return usagef("expected at most one argument, [%s], got %d (%s)", name, len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// group is a command that only holds subcommands: with no argument it
// prints its help, with an unknown one it is a usage error.
func group(use, short string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for \"ejctl %s\"", args[0], use)
			}
			return cmd.Help()
		}}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

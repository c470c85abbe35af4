package ejctl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every ejctl command the README and docs/ name exists, with the flags
// they give it: docs/scheduling.md named an `ejctl job status` that never
// existed. Checked: each `ejctl …` in a code span or a fenced block, and
// the commands in docs/ejctl.md's command table.
func TestDocsNameRealCommands(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	root := (&cli{env: Env{}}).rootCmd()
	root.InitDefaultCompletionCmd()
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, use := range ejctlUses(string(b), filepath.Base(f) == "ejctl.md") {
			checked++
			text, _, _ := strings.Cut(use.text, "`") // a code span in a fenced block's comment ends there
			if err := checkUse(root, strings.Fields(text)); err != nil {
				t.Errorf("%s:%d: `ejctl %s`: %v", f, use.line, use.text, err)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d uses of ejctl found in the docs: the scan is broken", checked)
	}
}

type docUse struct {
	line int
	text string
}

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	ejctlRE    = regexp.MustCompile(`(?:^|[\s/(])ejctl((?: +[^\s#;&<>)]+)*)`)
	tableRowRE = regexp.MustCompile("^\\| *(`[^|]*(?:\\\\\\|[^|]*)*)\\|")
)

// ejctlUses finds the ejctl command lines of a Markdown text: in fenced
// blocks, in code spans, and (commandTable) the first cell of the rows of
// docs/ejctl.md's command table, which name commands without "ejctl".
func ejctlUses(md string, commandTable bool) []docUse {
	var out []docUse
	fenced := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		var code []string
		if fenced {
			code = []string{line}
		} else {
			for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
				code = append(code, m[1])
			}
			if m := tableRowRE.FindStringSubmatch(line); commandTable && m != nil && !strings.Contains(line, "| command |") {
				for _, span := range codeSpanRE.FindAllStringSubmatch(m[1], -1) {
					out = append(out, docUse{i + 1, span[1]})
				}
			}
		}
		for _, c := range code {
			for _, m := range ejctlRE.FindAllStringSubmatch(c, -1) {
				out = append(out, docUse{i + 1, strings.TrimSpace(m[1])})
			}
		}
	}
	return out
}

// checkUse walks words down the command tree: a word where a command has
// subcommands must name one (alternatives a|b each), a flag must exist on
// the command reached, the rest are arguments, as many as the command
// accepts (docs/jobs.md's `ejctl history my_job` passed the flag check
// and failed when run).
func checkUse(cmd *cobra.Command, words []string) error {
	var args []string
	elided := false // "…" stands for arguments left out
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], "[]`")
		if w == "" || strings.Contains(w, "…") || strings.Contains(w, "...") {
			elided = true
			continue
		}
		if strings.HasPrefix(w, "-") {
			f, err := lookupFlag(cmd, w)
			if err != nil {
				return err
			}
			if f.NoOptDefVal == "" && !strings.Contains(w, "=") && i+1 < len(words) && !strings.HasPrefix(strings.Trim(words[i+1], "[]"), "-") {
				i++ // its value
			}
			continue
		}
		if !cmd.HasSubCommands() {
			if !strings.HasPrefix(words[i], "[") { // [OPTIONAL] may be left out
				args = append(args, w)
			}
			continue // an argument
		}
		for _, alt := range strings.Split(strings.ReplaceAll(w, `\|`, "|"), "|") {
			sub := findSub(cmd, alt)
			if sub == nil {
				return fmt.Errorf("%q has no command %q", cmd.CommandPath(), alt)
			}
			if err := checkUse(sub, words[i+1:]); err != nil {
				return err
			}
		}
		return nil
	}
	// A command named with no arguments is a mention in prose ("run
	// `ejctl app publish` first"), not a command line to check.
	if cmd.Args != nil && !elided && len(args) > 0 {
		if err := cmd.Args(cmd, args); err != nil {
			return fmt.Errorf("%q with arguments %q: %v", cmd.CommandPath(), args, err)
		}
	}
	return nil
}

func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, s := range cmd.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}

func lookupFlag(cmd *cobra.Command, w string) (*pflag.Flag, error) {
	name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		if strings.HasPrefix(w, "--") {
			if f := fs.Lookup(name); f != nil {
				return f, nil
			}
		} else if f := fs.ShorthandLookup(name); len(name) == 1 && f != nil {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%q has no flag %s", cmd.CommandPath(), w)
}

// The check itself refuses what does not exist.
func TestCheckUseRefuses(t *testing.T) {
	root := (&cli{env: Env{}}).rootCmd()
	for _, bad := range []string{"job status x", "job trigger x --nope", "tasks -z", "nope", "app ls|frob", "history a b", "job trigger a b"} {
		if checkUse(root, strings.Fields(bad)) == nil {
			t.Errorf("ejctl %s passed the check", bad)
		}
	}
	for _, good := range []string{"job trigger x --wait --timeout 5m", "-o json job ls", "app ls|get|rm", "history --job=x --failed", "app rm x -y", "history my_job", "history my_job --failed", "job trigger JOB …"} {
		if err := checkUse(root, strings.Fields(good)); err != nil {
			t.Errorf("ejctl %s: %v", good, err)
		}
	}
}

package executor

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ejcloud/elasticjob/executor/extract"
)

// command is a resolved program, its arguments and working directory.
type command struct {
	path string
	args []string
	dir  string
	// script is the bootstrap file the command runs ("" for a script
	// command line) and words its arguments from bootstrapScript: what
	// the Java detection (java.go) looks at and rebuilds a JVM command from.
	script string
	words  []string
}

// buildCommand resolves what a task runs. With a script command line it is
// `/bin/sh -c '<line> "$@"' sh <JSON>` (see scriptLine); otherwise the
// bootstrap script's first word is a path in the app root (backslashes read
// as slashes) and the other words are arguments. The sharding context JSON
// is always the last argument. A script that is not executable, or has
// neither a #! line nor an ELF header, is run by /bin/sh.
func buildCommand(app extract.Result, bootstrap, commandLine, ctxJSON string) (command, error) {
	words := strings.Fields(strings.ReplaceAll(bootstrap, `\`, "/"))
	script := ""
	if len(words) > 0 {
		script = path.Clean(words[0])
	}
	root := appRoot(app.Dir, script)
	if strings.TrimSpace(commandLine) != "" {
		return command{path: "/bin/sh", args: []string{"-c", scriptLine(commandLine), "sh", ctxJSON}, dir: root}, nil
	}
	if script == "" || path.IsAbs(script) || script == ".." || strings.HasPrefix(script, "../") {
		return command{}, fmt.Errorf("bootstrap script %q must be a relative path inside the app", bootstrap)
	}
	full := filepath.Join(root, filepath.FromSlash(script))
	if st, err := os.Stat(full); err != nil || !st.Mode().IsRegular() {
		if app.Single == "" {
			return command{}, fmt.Errorf("bootstrap script %s not found in the app", script)
		}
		full = filepath.Join(app.Dir, app.Single) // a single-file app runs that file
	}
	args := append(append([]string(nil), words[1:]...), ctxJSON)
	if !directlyExecutable(full) {
		return command{path: "/bin/sh", args: append([]string{full}, args...), dir: root, script: full, words: words[1:]}, nil
	}
	return command{path: full, args: args, dir: root, script: full, words: words[1:]}, nil
}

// appRoot is the directory the bootstrap script is relative to: the
// extraction root, or else its single top-level directory when the script is
// found there (packages built as my-job/bin/start.sh).
func appRoot(dir, script string) string {
	if script == "" || exists(filepath.Join(dir, script)) {
		return dir
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || !entries[0].IsDir() {
		return dir
	}
	if inner := filepath.Join(dir, entries[0].Name()); exists(filepath.Join(inner, script)) {
		return inner
	}
	return dir
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// directlyExecutable reports whether exec(2) can run the file itself.
func directlyExecutable(p string) bool {
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm()&0o111 == 0 {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := f.Read(head)
	return bytes.HasPrefix(head[:n], []byte("#!")) || bytes.Equal(head[:n], []byte("\x7fELF"))
}

// scriptLine is the /bin/sh -c program of a script command line: the line
// as written (shell syntax: quotes, variables, pipes, ;, && all work) with
// ` "$@"` appended, so that the sharding context JSON, passed to sh as its
// one positional parameter, becomes the last argument of the line's last
// simple command, exactly, whatever characters it holds. Trailing blanks
// and ;s are dropped first so that "cmd;" gives `cmd "$@"`, not `cmd; "$@"`.
// A line ending in `&` or a compound command's closing word (done, fi,
// esac, }) is left as it is, and one ending in a comment or a subshell's
// `)` swallows or breaks the argument: such lines can read "$1" (set
// inside sh -c) or $ELASTICJOB_SHARDING_CONTEXT instead.
func scriptLine(line string) string {
	line = strings.TrimRight(line, " \t\r\n;")
	words := strings.Fields(line)
	if len(words) == 0 {
		return line
	}
	switch last := words[len(words)-1]; {
	case strings.HasSuffix(last, "&") && !strings.HasSuffix(last, "&&"),
		last == "}", last == "done", last == "fi", last == "esac":
		return line // appending "$@" would change its meaning or be a syntax error
	}
	return line + ` "$@"`
}

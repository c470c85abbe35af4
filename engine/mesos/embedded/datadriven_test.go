package embedded

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/internal/datadriven"
)

// The scenario tests read testdata/<dir>/*.txt with the project's
// datadriven runner (internal/datadriven, round's and task's scenario
// files have the same shape): a case is a command line ("name key=value
// ..."), optional input lines, "----", and the expected output up to a
// blank line; lines starting with # are comments. With -rewrite the
// expected outputs are written from what the cases return.

// scenarioCase is one case of a scenario file, its command line read.
type scenarioCase struct {
	file string
	line int               // of the command, 1-based
	cmd  string            // the command's name
	args map[string]string // its key=value words (a bare word is key=true)
	in   []string          // the lines between the command and ----
}

// fatalf fails the test naming the case's place in its file.
func (c scenarioCase) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s:%d: "+format, append([]any{c.file, c.line}, args...)...)
}

// runScenarioDir runs every file of testdata/dir through run, one subtest
// per file.
func runScenarioDir(t *testing.T, dir string, run func(t *testing.T, c scenarioCase) []string) {
	datadriven.Glob(t, filepath.Join("testdata", dir, "*.txt"), func(t *testing.T, dc datadriven.Case) []string {
		words := strings.Fields(dc.Input[0])
		return run(t, scenarioCase{file: dc.File, line: dc.Line, cmd: words[0], args: datadriven.KV(words[1:]), in: dc.Input[1:]})
	})
}

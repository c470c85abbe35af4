package embedded

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The scenario tests read testdata/<dir>/*.txt in the etcd/raft datadriven
// shape (round's scenario files have it too): a case is a command line
// ("name key=value ..."), optional input lines, "----", and the expected
// output up to a blank line; lines starting with # are comments. With
// -rewrite the expected outputs are written from what the cases return.
var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs in testdata/*/*.txt")

// scenarioCase is one case of a scenario file.
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
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.txt"))
	if len(files) == 0 {
		t.Fatalf("no scenarios in testdata/%s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScenarioFile(t, f, run) })
	}
}

func runScenarioFile(t *testing.T, file string, run func(t *testing.T, c scenarioCase) []string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" || strings.HasPrefix(lines[i], "#") {
			out.WriteString(lines[i] + "\n")
			i++
			continue
		}
		start := i
		var in []string
		for i < len(lines) && lines[i] != "----" {
			in = append(in, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: a case without ----", file, start+1)
		}
		i++
		var want []string
		for i < len(lines) && lines[i] != "" {
			want = append(want, lines[i])
			i++
		}
		words := strings.Fields(in[0])
		c := scenarioCase{file: file, line: start + 1, cmd: words[0], args: kvWords(words[1:]), in: in[1:]}
		got := run(t, c)
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s: output differs\n--- got\n%s\n--- want\n%s", file, start+1, in[0],
				strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, l := range in {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// kvWords parses "key=value" words; a bare word is key=true.
func kvWords(words []string) map[string]string {
	m := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			v = "true"
		}
		m[k] = v
	}
	return m
}

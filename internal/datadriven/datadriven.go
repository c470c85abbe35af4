package datadriven

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the scenario files (testdata/*.txt)")

// Case is one scenario of a file: its input lines and where it begins.
type Case struct {
	File  string
	Line  int // the 1-based line of its first input line
	Input []string
}

// Where names the case's n-th input line (0-based) as file:line, for
// errors.
func (c Case) Where(n int) string { return fmt.Sprintf("%s:%d", c.File, c.Line+n) }

// Glob runs every file the pattern matches as a subtest named by its base
// name; a pattern that matches no file fails t.
func Glob(t *testing.T, pattern string, run func(t *testing.T, c Case) []string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatalf("scenario files %s: %v", pattern, err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenario files match %s", pattern)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { File(t, f, run) })
	}
}

// File runs the cases of one file: each one's output from run is
// compared with the expected lines (or, with -rewrite, replaces them).
func File(t *testing.T, file string, run func(t *testing.T, c Case) []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := parse(file, string(b))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, c := range cases {
		out.WriteString(c.comments)
		got := run(t, c.Case)
		if !*rewrite && strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: output differs\n--- got\n%s\n--- want\n%s", c.Where(0), strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
		for _, l := range c.Input {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
	}
	out.WriteString(trailer(cases))
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func trailer(cases []parsed) string {
	if len(cases) == 0 {
		return ""
	}
	return cases[len(cases)-1].tail
}

// parsed is a case with the comment lines before it and its expected
// output; the last one also holds the comments after it.
type parsed struct {
	Case
	comments string
	want     []string
	tail     string
}

// parse splits a scenario file into its cases.
func parse(file, text string) ([]parsed, error) {
	var cases []parsed
	var comments strings.Builder
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" || strings.HasPrefix(lines[i], "#") {
			comments.WriteString(lines[i] + "\n")
			i++
			continue
		}
		c := parsed{Case: Case{File: file, Line: i + 1}, comments: comments.String()}
		comments.Reset()
		for i < len(lines) && lines[i] != "----" {
			c.Input = append(c.Input, lines[i])
			i++
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: a case without ----", file, c.Line)
		}
		i++
		for i < len(lines) && lines[i] != "" {
			c.want = append(c.want, lines[i])
			i++
		}
		cases = append(cases, c)
	}
	if n := len(cases); n > 0 {
		cases[n-1].tail = comments.String()
	} else if comments.Len() > 0 {
		return nil, fmt.Errorf("%s: no case", file)
	}
	return cases, nil
}

// Fields splits an input line into words at spaces; a value written in
// Go's double quotes (key="two words") is one word, unquoted.
func Fields(line string) ([]string, error) {
	var out []string
	for s := strings.TrimSpace(line); s != ""; s = strings.TrimLeft(s, " \t") {
		end := strings.IndexAny(s, " \t")
		if q := strings.IndexByte(s, '"'); q >= 0 && (end < 0 || q < end) {
			prefix, rest := s[:q], s[q:]
			quoted, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			v, _ := strconv.Unquote(quoted)
			out = append(out, prefix+v)
			s = rest[len(quoted):]
			continue
		}
		if end < 0 {
			end = len(s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out, nil
}

// KV reads "key=value" words into a map; a bare word is key=true.
func KV(words []string) map[string]string {
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

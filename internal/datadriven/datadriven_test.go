package datadriven

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	got, err := Fields(`update TASK_KILLED  message="killed by a: b" by=x`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"update", "TASK_KILLED", "message=killed by a: b", "by=x"}
	if !slices.Equal(got, want) {
		t.Fatalf("Fields = %q, want %q", got, want)
	}
	if _, err := Fields(`a m="open`); err == nil {
		t.Fatal("an unterminated quote was accepted")
	}
	if m := KV([]string{"a=1", "b"}); m["a"] != "1" || m["b"] != "true" {
		t.Fatalf("KV = %v", m)
	}
}

func TestParse(t *testing.T) {
	text := "# one\n\nin 1\nin 2\n----\nout\n\n# two\nin 3\n----\n\n# end\n"
	cases, err := parse("f.txt", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 || cases[0].Line != 3 || !slices.Equal(cases[0].Input, []string{"in 1", "in 2"}) ||
		!slices.Equal(cases[0].want, []string{"out"}) || cases[1].comments != "\n# two\n" || len(cases[1].want) != 0 ||
		cases[1].tail != "\n# end\n" {
		t.Fatalf("parse = %+v", cases)
	}
	if _, err := parse("f.txt", "in\nno separator\n"); err == nil || !strings.Contains(err.Error(), "f.txt:1") {
		t.Fatalf("a case without ---- gave %v", err)
	}
}

// File with -rewrite writes what the cases return, keeping comments.
func TestRewrite(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(f, []byte("# c\nx 1\n----\nold\n\nx 2\n----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	*rewrite = true
	defer func() { *rewrite = false }()
	File(t, f, func(t *testing.T, c Case) []string { return []string{"got " + strings.Fields(c.Input[0])[1]} })
	b, _ := os.ReadFile(f)
	if want := "# c\nx 1\n----\ngot 1\n\nx 2\n----\ngot 2\n"; string(b) != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", b, want)
	}
	*rewrite = false
	File(t, f, func(t *testing.T, c Case) []string { return []string{"got " + strings.Fields(c.Input[0])[1]} })
}

package archtest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goCommand is a test running the go command itself (go build, go run, go install), or
// soak.Build, which does.
var goCommand = regexp.MustCompile(`exec\.Command(Context)?\((ctx, )?"go"|soak\.Build\(`)

// TestNoTestCompiles: no test, and no test harness, runs the go command. The tests that
// start the project's programs take the binaries make build made (internal/testbin), so a
// make test compiles the tree once and no test compiles under a deadline of its own (a
// loaded machine once killed the soak smoke's own go build at its deadline).
func TestNoTestCompiles(t *testing.T) {
	root := "../.."
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(rel, "e2e/harness/") {
			return nil
		}
		n++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// Every match starts with one of these; the regular expression over each whole
		// test file, under the race detector, took seconds.
		if !bytes.Contains(b, []byte("exec.Command")) && !bytes.Contains(b, []byte("soak.Build")) {
			return nil
		}
		if loc := goCommand.FindIndex(b); loc != nil {
			line := 1 + strings.Count(string(b[:loc[0]]), "\n")
			t.Errorf("%s:%d runs the go command: take the binary from internal/testbin (make build's bin/)", rel, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 300 {
		t.Fatalf("found %d test files; the walk is wrong", n)
	}
}

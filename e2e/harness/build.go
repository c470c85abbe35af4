package harness

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testbin"
)

// Build returns the directory holding the commands ./cmd/NAME of the module at moduleRoot:
// bin/ as make build made it under make test, else binDir, built into now (testbin).
func Build(moduleRoot, binDir string, names ...string) (string, error) {
	return testbin.Commands(moduleRoot, binDir, names...)
}

// Entry is one entry of an archive TarGz writes: a directory when its name
// ends in /, a symlink when it has a link, else an executable file.
type Entry struct {
	Name, Body, Link string
}

// Scripts are the entries of an app of executable files (path → content)
// under bin/: the directory bin/, then the files in name order.
func Scripts(files map[string]string) []Entry {
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	out := []Entry{{Name: "bin/"}}
	for _, k := range names {
		out = append(out, Entry{Name: k, Body: files[k]})
	}
	return out
}

// TarGz writes the entries as a tar.gz, every one dated 2026-01-01 (the
// same entries give the same bytes).
func TarGz(entries ...Entry) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, ModTime: mtime, Format: tar.FormatPAX}
		switch {
		case strings.HasSuffix(e.Name, "/"):
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.Link, 0o777
		default:
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o755, int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.Name, err)
		}
		if _, err := tw.Write([]byte(e.Body)); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Line is one line of a file ReadLines read.
type Line struct {
	File, Text string
}

// ReadLines returns the lines of every file matching pattern (the output
// job scripts append to), file by file in name order.
func ReadLines(t testing.TB, pattern string) []Line {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []Line
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			out = append(out, Line{File: f, Text: sc.Text()})
		}
	}
	return out
}

// FindBuild returns the engine build a real-engine tier runs against, "" when there is none:
// the directory the environment variable env names (which must hold every one of files: a
// wrong path is an error, never a silent skip), else the first of dirs that holds them.
func FindBuild(env string, dirs []string, files ...string) (string, error) {
	has := func(dir string) bool {
		for _, f := range files {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if v := os.Getenv(env); v != "" {
		if !has(v) {
			return "", fmt.Errorf("%s=%s has no %s", env, v, strings.Join(files, ", "))
		}
		return filepath.Abs(v)
	}
	for _, dir := range dirs {
		if has(dir) {
			return filepath.Abs(dir)
		}
	}
	return "", nil
}

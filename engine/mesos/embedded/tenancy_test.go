package embedded

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReachable(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := reachable(root, nil, false); err != nil {
		t.Skipf("the temporary directory is out of other users' reach: %v", err)
	}
	closed := filepath.Join(root, "closed")
	data := filepath.Join(closed, "data")
	if err := os.MkdirAll(filepath.Join(data, "mesos"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(data, "mesos")
	if err := reachable(work, []string{work}, false); err == nil || !strings.Contains(err.Error(), "closed to other users") {
		t.Fatalf("a work directory below a 0700 directory: %v", err)
	}
	if err := os.Chmod(closed, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o700); err != nil { // hidden: its tmpfs takes its place
		t.Fatal(err)
	}
	if err := reachable(work, []string{data, work}, false); err != nil {
		t.Fatalf("below a hidden 0700 data directory: %v", err)
	}
	prog := filepath.Join(root, "executor")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := reachable(prog, nil, true); err == nil {
		t.Fatal("a program other users cannot run was accepted")
	}
	_ = os.Chmod(prog, 0o755)
	if err := reachable(prog, nil, true); err != nil {
		t.Fatal(err)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{"pay": "pay", "a/b": "a_2fb", ".x": "_2ex", "ns-1.2": "ns-1.2"} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}

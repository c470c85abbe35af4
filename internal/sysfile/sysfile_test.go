package sysfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("old contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, "12", true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "12" {
		t.Fatalf("truncating write left %q", b)
	}
	if err := Write(p, "3", false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "32" {
		t.Fatalf("plain write left %q", b)
	}
	err := Write(filepath.Join(t.TempDir(), "missing"), "1", false)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want a not-exist error", err)
	}
}

package embedded

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFilesRead is the agent's side of one log read: find the file
// in its sandbox, open it as a tenant's file is opened, read 4 KiB.
func BenchmarkFilesRead(b *testing.B) {
	c, err := New(Config{WorkDir: b.TempDir(), CPUs: 1, MemMB: 1024, DiskMB: 100, Ports: "[31000-31000]",
		Hostname: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(c.sandboxRoot(), "agent-S0", "frameworks", "fw", "executors", "app@-@agent-S0", "runs", "c1")
	tasks := filepath.Join(dir, "tasks", "job@-@0@-@READY@-@agent-S0@-@u1")
	if err := os.MkdirAll(tasks, 0o755); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(tasks, "stdout")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o644); err != nil {
		b.Fatal(err)
	}
	c.live[dir] = &executor{dir: dir}
	b.ReportAllocs()
	for b.Loop() {
		f, herr := c.openSandboxFile(path)
		if herr != nil {
			b.Fatal(herr)
		}
		if _, _, herr := readAt(f, 4096, 4096); herr != nil {
			b.Fatal(herr)
		}
		f.Close()
	}
}

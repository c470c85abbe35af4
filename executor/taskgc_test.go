package executor

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
)

func taskDir(t *testing.T, sandbox, name string, written time.Time) string {
	t.Helper()
	dir := filepath.Join(sandbox, "tasks", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "stdout")
	if err := os.WriteFile(out, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{out, dir} {
		if err := os.Chtimes(p, written, written); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func present(p string) bool { _, err := os.Stat(p); return err == nil }

// Finished tasks' directories go by age, sooner on a fuller disk; a
// running task's never does.
func TestTaskGCByAgeAndDisk(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	usage := 0.0
	g := &TaskGC{Delay: 10 * time.Hour, Headroom: 0.1, Clock: clk, DiskUsage: func(string) (float64, error) { return usage, nil }}
	sb := t.TempDir()
	old := taskDir(t, sb, "old", clk.Now().Add(-20*time.Hour))
	busy := taskDir(t, sb, "busy", clk.Now().Add(-20*time.Hour))
	fresh := taskDir(t, sb, "fresh", clk.Now().Add(-time.Hour))
	g.begin("busy")
	if n := g.Collect(sb); n != 1 || present(old) || !present(busy) || !present(fresh) {
		t.Fatalf("removed %d; old %v busy %v fresh %v", n, present(old), present(busy), present(fresh))
	}
	usage = 0.85 // 0.5h allowed
	if n := g.Collect(sb); n != 1 || present(fresh) || !present(busy) {
		t.Fatalf("fuller disk: removed %d; fresh %v busy %v", n, present(fresh), present(busy))
	}
	g.end(sb, "busy", slog.New(slog.DiscardHandler)) // the task ended: due at once (first collection of end)
	if present(busy) {
		t.Fatal("a finished task's old directory survived")
	}
}

// Through the Pipeline: a task's end collects the directories of tasks
// that finished long enough ago.
func TestPipelineCollectsFinishedTasks(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	p := newPipeline(t)
	p.TaskGC = &TaskGC{Delay: time.Hour, Headroom: 0.1, Every: -1, Clock: clk,
		DiskUsage: func(string) (float64, error) { return 0, nil }}
	url := scriptURL(t, "run.sh", "#!/bin/sh\necho hi\n")
	first, second := "job@-@0@-@READY@-@a@-@1", "job@-@0@-@READY@-@a@-@2"
	if out := p.Run(t.Context(), first, taskData(url, "run.sh", 0, nil), Hooks{}); out.State != Finished {
		t.Fatalf("%+v", out)
	}
	firstDir := filepath.Join(p.Sandbox, "tasks", first)
	if !present(firstDir) {
		t.Fatal("a just-finished task's directory was removed")
	}
	then := clk.Now().Add(-2 * time.Hour) // as if it ended two hours ago
	os.Chtimes(filepath.Join(firstDir, "stdout"), then, then)
	os.Chtimes(filepath.Join(firstDir, "stderr"), then, then)
	os.Chtimes(firstDir, then, then)
	if out := p.Run(t.Context(), second, taskData(url, "run.sh", 0, nil), Hooks{}); out.State != Finished {
		t.Fatalf("%+v", out)
	}
	if present(firstDir) || !present(filepath.Join(p.Sandbox, "tasks", second)) {
		t.Fatalf("first there %v, second there %v", present(firstDir), present(filepath.Join(p.Sandbox, "tasks", second)))
	}
}

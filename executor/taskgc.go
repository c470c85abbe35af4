package executor

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/sandboxgc"
)

// TaskGC removes the directories of finished tasks (tasks/<taskId>: their
// stdout and stderr) from the sandbox of a long-lived executor, by the
// rule of package sandboxgc: older than Delay × max(0, 1 − Headroom − disk
// usage). A running task's directory is never removed. It runs when a
// task ends, at most once per Every. (A terminated executor's whole
// sandbox is the agent's to collect.)
type TaskGC struct {
	Delay     time.Duration
	Headroom  float64
	Every     time.Duration                 // default a minute
	Clock     clock.Clock                   // default the system clock
	DiskUsage func(string) (float64, error) // default sandboxgc.DiskUsage

	mu      sync.Mutex
	running map[string]int // task directory name → runs of that task in progress
	last    time.Time      // last collection
}

// begin marks a task's directory in use.
func (g *TaskGC) begin(taskID string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running == nil {
		g.running = map[string]int{}
	}
	g.running[safeName(taskID)]++
}

// end releases it and collects if it is time.
func (g *TaskGC) end(sandbox, taskID string, log *slog.Logger) {
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.running[safeName(taskID)]--; g.running[safeName(taskID)] <= 0 {
		delete(g.running, safeName(taskID))
	}
	now, every := g.clock().Now(), g.Every
	if every == 0 {
		every = time.Minute
	}
	due := now.Sub(g.last) >= every
	if due {
		g.last = now
	}
	g.mu.Unlock()
	if due {
		if n := g.Collect(sandbox); n > 0 {
			log.Info("removed directories of finished tasks", "count", n)
		}
	}
}

// Collect removes the finished tasks' directories that are too old and
// returns how many.
func (g *TaskGC) Collect(sandbox string) int {
	usage := 0.0
	du := g.DiskUsage
	if du == nil {
		du = sandboxgc.DiskUsage
	}
	if u, err := du(sandbox); err == nil {
		usage = u
	}
	maxAge := sandboxgc.MaxAge(g.Delay, g.Headroom, usage)
	now := g.clock().Now()
	dirs, _ := os.ReadDir(filepath.Join(sandbox, "tasks"))
	removed := 0
	for _, d := range dirs {
		dir := filepath.Join(sandbox, "tasks", d.Name())
		if !d.IsDir() || now.Sub(lastWrite(dir)) < maxAge {
			continue
		}
		g.mu.Lock()
		busy := g.running[d.Name()] > 0
		if !busy {
			busy = os.RemoveAll(dir) != nil
		}
		g.mu.Unlock() // held while removing: begin waits, so no task starts in a doomed directory
		if !busy {
			removed++
		}
	}
	return removed
}

func (g *TaskGC) clock() clock.Clock {
	if g.Clock == nil {
		return clock.Real{}
	}
	return g.Clock
}

// lastWrite is when a task directory or its output was last written.
func lastWrite(dir string) time.Time {
	var t time.Time
	for _, p := range []string{dir, filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")} {
		if st, err := os.Stat(p); err == nil && st.ModTime().After(t) {
			t = st.ModTime()
		}
	}
	return t
}

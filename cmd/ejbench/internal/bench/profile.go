package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// FetchCPUProfile takes a CPU profile of the scheduler on port for d
// through its /debug/pprof (started with --debug-pprof true) into path.
func FetchCPUProfile(port int, d time.Duration, path string) error {
	return FetchProfile(port, fmt.Sprintf("profile?seconds=%d", max(1, int(d.Seconds()))), path)
}

// FetchProfile saves /debug/pprof/<what> of the scheduler on port to path.
func FetchProfile(port int, what, path string) error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s", port, what))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s", resp.Status)
	}
	if err == nil {
		err = os.WriteFile(path, b, 0o640)
	}
	return err
}

// ProfileTop adds the top of a binary's CPU profile (by cumulative time)
// to the report.
func ProfileTop(binDir string, r *Report, sc, bin, prof, span string) {
	PprofTop(binDir, r, sc, bin, prof, bin+" CPU profile "+span, "-cum", "-nodecount=40")
}

// PprofTop adds `go tool pprof -top` of a binary's profile, with args, to
// the report under title.
func PprofTop(binDir string, r *Report, sc, bin, prof, title string, args ...string) {
	cmd := append(append([]string{"tool", "pprof", "-top"}, args...), filepath.Join(binDir, bin), prof)
	out, err := exec.Command("go", cmd...).CombinedOutput()
	if err != nil {
		r.Note(fmt.Sprintf("%s: go tool pprof %s: %v", sc, prof, err))
		return
	}
	r.Extra = append(r.Extra, fmt.Sprintf("%s: %s, go tool pprof -top %s:\n%s",
		sc, title, strings.Join(args, " "), strings.TrimSpace(string(out))+"\n"))
}

// LaunchStages are the scheduler's launch-path stages
// (elasticjob_launch_stage_seconds{stage}), in order, with what each
// spans; see docs/operations.md, Metrics.
var LaunchStages = []struct{ Name, What string }{
	{"commit", "API commit (trigger's ready entry)"},
	{"seen", "committed → ready entry seen by the leader"},
	{"accept", "seen → ACCEPT sent"},
	{"agent", "ACCEPT → executor got the LAUNCH"},
	{"executor", "LAUNCH → process start begun"},
	{"fork", "fork+exec of the job's process"},
	{"running", "process started → TASK_RUNNING at the scheduler"},
}

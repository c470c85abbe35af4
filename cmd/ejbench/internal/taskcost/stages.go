package taskcost

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// stage is one part of a task's path and the frames that are its own:
// a profile sample belongs to the stage of its leaf-most frame that any
// stage claims (a frame of the runtime, sync, syscall or strconv claims
// nothing, so an allocation or a write is charged to whoever asked for
// it, and so is a statement of sqlite: to the store's commits, history or
// the embedded master's log, whichever ran it); a sample no frame of which
// is claimed is the runtime's (the collector's workers, the goroutine
// scheduler).
type stage struct {
	name  string
	marks []string // substrings of "function file:line"
}

// stages, most specific first within one frame (an embedded file is
// matched before the package's catch-all, Mesos framing before the
// module's).
var stages = []stage{
	{"API / trigger", []string{"elasticjob/api.", "elasticjob/api/"}},
	{"producer / timetable", []string{"scheduler/producer", "scheduler/timetable", "scheduler/missed.go", "elasticjob/jobs/cron", "elasticjob/jobs/timing", "elasticjob/jobs/calendar"}},
	{"store commits (registry, sqlite)", []string{"elasticjob/store", "elasticjob/registry"}},
	{"round / offers", []string{"elasticjob/round", "elasticjob/offers", "engine/clusters"}},
	{"executor talk / status updates", []string{"embedded/exec_api.go", "embedded/updates.go", "embedded/reliable.go"}},
	{"HTTP / encoding", []string{"net/http", "encoding/json", "encoding/base64", "bufio.", "net.", "net/", "crypto/", "compress/", "protobuf", "mime", "io.Copy", "gin-gonic", "internal/mesosframe", "mesos/mesos-go", "embedded/codec.go"}},
	{"isolation (cgroups)", []string{"elasticjob/cgroups", "internal/sysfile", "embedded/isolation.go", "embedded/taskgroups.go"}},
	{"embedded agent (checkpoint, processes)", []string{"embedded/agent", "embedded/executor.go", "embedded/process.go", "embedded/host", "embedded/pidwatch", "embedded/reap", "embedded/sysproc", "embedded/checkpoint", "embedded/fetch.go", "embedded/tenancy.go", "embedded/nsgroups.go", "embedded/diskwatch", "embedded/du_", "embedded/gc.go", "embedded/files.go", "embedded/archive.go"}},
	{"embedded master", []string{"engine/mesos/embedded"}},
	{"engine client (scheduler side)", []string{"elasticjob/engine/"}},
	{"history", []string{"elasticjob/history"}},
	{"metrics", []string{"elasticjob/metrics", "prometheus"}},
	{"logging", []string{"log/slog"}},
	{"scheduler core (launch, queue, registry view)", []string{"elasticjob/"}},
}

// runtimeStage holds the samples no stage claims.
const runtimeStage = "GC / runtime other"

// stageNames are the stages in the order they are reported.
func stageNames() []string {
	out := make([]string, 0, len(stages)+1)
	for _, s := range stages {
		out = append(out, s.name)
	}
	return append(out, runtimeStage)
}

// classify is the stage of one stack, leaf first.
func classify(frames []string) string {
	for _, f := range frames {
		for _, s := range stages {
			for _, m := range s.marks {
				if strings.Contains(f, m) {
					return s.name
				}
			}
		}
	}
	return runtimeStage
}

// splitTraces reads `go tool pprof -traces -lines` output and sums the
// samples' time by stage. The output is blocks separated by lines of
// dashes; a block's first frame line starts with its time ("10ms",
// "1.2s"), the frames follow leaf first, one per line.
func splitTraces(r io.Reader) (map[string]time.Duration, time.Duration, error) {
	by := map[string]time.Duration{}
	var total, v time.Duration
	var frames []string
	flush := func() {
		if v > 0 && len(frames) > 0 {
			by[classify(frames)] += v
			total += v
		}
		v, frames = 0, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inBody := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			inBody = true
			continue
		}
		if !inBody || strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(frames) == 0 && v == 0 {
			if strings.HasSuffix(f[0], ":") { // a label line ("bytes:  64")
				continue
			}
			d, err := time.ParseDuration(f[0])
			if err != nil {
				return nil, 0, fmt.Errorf("pprof -traces: sample line %q: %w", line, err)
			}
			v = d
			f = f[1:]
		}
		if len(f) > 0 {
			frames = append(frames, strings.Join(f, " "))
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	if total == 0 {
		return nil, 0, fmt.Errorf("pprof -traces: no samples")
	}
	return by, total, nil
}

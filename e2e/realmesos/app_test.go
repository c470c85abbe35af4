//go:build e2e

package realmesos

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// recorderPath is where appServer serves the recorder app.
const recorderPath = "/recorder.tar.gz"

// record.sh appends "item taskId" to $OUT/item.log for every run (OUT is the job parameter).
const recordScript = `#!/bin/sh
OUT="$ELASTICJOB_JOB_PARAMETER"
printf '%s %s\n' "$ELASTICJOB_SHARDING_ITEM" "$ELASTICJOB_TASK_ID" >> "$OUT/$ELASTICJOB_SHARDING_ITEM.log"
echo "recorded shard $ELASTICJOB_SHARDING_ITEM"
`

// slow.sh records the start and the end of a run that sleeps for the
// shard's parameter (seconds) in $OUT/slow.txt: a run still going when its
// scheduler is replaced.
const slowScript = `#!/bin/sh
OUT="$ELASTICJOB_JOB_PARAMETER"
printf 'start %s %s\n' "$ELASTICJOB_SHARDING_ITEM" "$ELASTICJOB_TASK_ID" >> "$OUT/slow.txt"
sleep "${ELASTICJOB_SHARDING_PARAMETER:-5}"
printf 'end %s %s\n' "$ELASTICJOB_SHARDING_ITEM" "$ELASTICJOB_TASK_ID" >> "$OUT/slow.txt"
`

// scheduled.sh appends the instant a backfill's run stands for to $OUT/scheduled.
const scheduledScript = `#!/bin/sh
OUT="$ELASTICJOB_JOB_PARAMETER"
printf '%s %s\n' "$ELASTICJOB_SCHEDULED_TIME" "$ELASTICJOB_TASK_ID" >> "$OUT/scheduled"
`

// apps serves the fixture apps over http, as an operator's web server would.
var apps = &appHandler{files: map[string][]byte{}}

type appHandler struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (h *appHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	data, ok := h.files[r.URL.Path]
	h.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, "app.tar.gz", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), bytes.NewReader(data))
}

func buildApps() error {
	app, err := harness.TarGz(harness.Scripts(map[string]string{"bin/record.sh": recordScript, "bin/slow.sh": slowScript, "bin/scheduled.sh": scheduledScript})...)
	if err != nil {
		return err
	}
	apps.mu.Lock()
	defer apps.mu.Unlock()
	apps.files[recorderPath] = app
	return nil
}

// recorderURL is the recorder app's http URL.
func recorderURL() string { return appServer.URL + recorderPath }

// jobRun is one run of record.sh, as it wrote it.
type jobRun struct {
	Item   int
	TaskID string
}

// runsIn reads every OUT/*.log line record.sh wrote.
func runsIn(t testing.TB, out string) []jobRun {
	t.Helper()
	var runs []jobRun
	for _, l := range harness.ReadLines(t, filepath.Join(out, "*.log")) {
		item, task, ok := strings.Cut(l.Text, " ")
		n, err := strconv.Atoi(item)
		if !ok || err != nil {
			t.Fatalf("%s: malformed line %q", l.File, l.Text)
		}
		runs = append(runs, jobRun{Item: n, TaskID: task})
	}
	return runs
}

// perItem counts runs by sharding item.
func perItem(runs []jobRun) map[int]int {
	m := map[int]int{}
	for _, r := range runs {
		m[r.Item]++
	}
	return m
}

// noTaskRanTwice fails if a task id appears in two runs.
func noTaskRanTwice(t testing.TB, runs []jobRun) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.TaskID] {
			t.Fatalf("task %s ran twice", r.TaskID)
		}
		seen[r.TaskID] = true
	}
}

// outDir is a fresh directory the job's runs write into.
func outDir(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

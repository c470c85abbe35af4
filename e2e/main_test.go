//go:build e2e

package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Built once by TestMain.
var (
	schedulerBin string // DIR/scheduler, with DIR/executor beside it
	ejctlBin     string // DIR/ejctl
	fixtureDir   string // apps served as file:// URLs; hostile archives aim here
	appServer    *httptest.Server
	served       = &appHandler{files: map[string][]byte{}, stats: map[string]*fetchStats{}}
)

// Fixture app files (file:// URLs are "file://" + fixture(name)).
const (
	demoApp        = "demo-app.tar.gz"    // examples/demo-app, as the README publishes it
	recorderTGZ    = "recorder.tar.gz"    // bin/*.sh below
	recorderZIP    = "recorder.zip"       // the same scripts zipped
	singleScript   = "single/record.sh"   // a single non-archive file
	randomTGZ      = "bad/random.tgz"     // 2 KB of random bytes: not an archive
	textFile       = "bad/notes.txt"      // a text file without a #! line
	escapeShallow  = "escape-shallow.tgz" // entry ../escape-e2e
	escapeDeep     = "escape-deep.tgz"    // entry ../../…/FIXTURES/escaped-deep.txt
	symlinkEscape  = "symlink-escape.tgz" // link -> /, then link/FIXTURES/via-symlink.txt
	escapeName     = "escape-e2e"         // the shallow target's base name
	deepTarget     = "escaped-deep.txt"   // written into fixtureDir if extraction escaped
	symlinkTarget  = "via-symlink.txt"    // idem, through the symlink
	servedPath     = "/recorder.tar.gz"   // recorderTGZ over http (per-test copies: /NAME/recorder.tar.gz)
	unreachableURL = "http://127.0.0.1:1/app.tgz"
)

// The recorder scripts. OUT (where they write) is the job parameter. Each
// run appends "item taskId executionSource shardingParameter" to
// OUT/item.log and the JSON last argument to OUT/item.ctx.
const recordPrologue = `OUT="$ELASTICJOB_JOB_PARAMETER"
for last; do :; done
printf '%s %s %s %s\n' "$ELASTICJOB_SHARDING_ITEM" "$ELASTICJOB_TASK_ID" "$ELASTICJOB_EXECUTION_SOURCE" "$ELASTICJOB_SHARDING_PARAMETER" >> "$OUT/$ELASTICJOB_SHARDING_ITEM.log"
printf '%s\n' "$last" >> "$OUT/$ELASTICJOB_SHARDING_ITEM.ctx"
`

var recorderScripts = map[string]string{
	// record.sh: record the run and succeed.
	"bin/record.sh": "#!/bin/sh\n" + recordPrologue + "echo \"recorded shard $ELASTICJOB_SHARDING_ITEM\"\n",
	// where.sh: record the run, and its cron instant and working directory (which
	// agent's sandbox, so which cluster, ran it).
	"bin/where.sh": "#!/bin/sh\n" + recordPrologue + "echo \"$ELASTICJOB_NOMINAL_AT $PWD\" >> \"$OUT/where\"\n",
	// scheduled.sh: record, and the instant a backfill's run stands for.
	"bin/scheduled.sh": "#!/bin/sh\n" + recordPrologue + `printf '%s\n' "$ELASTICJOB_SCHEDULED_TIME" >> "$OUT/scheduled"` + "\n",
	// flaky.sh: shard 0 fails on its first attempt (marker file), then succeeds.
	"bin/flaky.sh": "#!/bin/sh\n" + recordPrologue + `if [ "$ELASTICJOB_SHARDING_ITEM" = 0 ] && [ ! -e "$OUT/0.marker" ]; then
  : > "$OUT/0.marker"
  echo "first attempt fails on purpose" >&2
  exit 3
fi
`,
	// gate.sh: record, then hold until OUT/release exists, logging its
	// start and end to OUT/events (to see executions overlap or not).
	"bin/gate.sh": "#!/bin/sh\n" + recordPrologue + `echo "start $ELASTICJOB_TASK_ID" >> "$OUT/events"
while [ ! -e "$OUT/release" ]; do sleep 0.05; done
echo "end $ELASTICJOB_TASK_ID" >> "$OUT/events"
`,
	// sleep.sh: record, write the pid, then become a long sleep.
	"bin/sleep.sh": "#!/bin/sh\n" + recordPrologue + `echo $$ > "$OUT/$ELASTICJOB_SHARDING_ITEM.pid"
exec sleep 300
`,
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "elasticjob-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := setup(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		return 1
	}
	appServer = httptest.NewServer(served)
	defer appServer.Close()
	return m.Run()
}

func setup(tmp string) error {
	binDir, err := harness.Build("..", filepath.Join(tmp, "bin"), "scheduler", "executor", "tenant-init", "mesos-local", "ejctl")
	if err != nil {
		return err
	}
	schedulerBin = filepath.Join(binDir, "scheduler")
	ejctlBin = filepath.Join(binDir, "ejctl")
	fixtureDir = filepath.Join(tmp, "fixtures")

	demo, err := tarDir("../examples/demo-app")
	if err != nil {
		return err
	}
	recorder := map[string]string{}
	for k, v := range recorderScripts {
		recorder[k] = v
	}
	deepName := strings.Repeat("../", 40) + strings.TrimPrefix(filepath.Join(fixtureDir, deepTarget), "/")
	files := map[string][]byte{
		demoApp:      demo,
		recorderTGZ:  mustTarGz(harness.Scripts(recorder)...),
		recorderZIP:  mustZip(recorder),
		singleScript: []byte(recorderScripts["bin/record.sh"]),
		randomTGZ:    randomBytes(2048),
		textFile:     []byte("echo this text has no interpreter line\n"),
		escapeShallow: mustTarGz(append(harness.Scripts(recorder),
			harness.Entry{Name: "../" + escapeName, Body: "escaped\n"})...),
		escapeDeep: mustTarGz(append(harness.Scripts(recorder),
			harness.Entry{Name: deepName, Body: "escaped\n"})...),
		symlinkEscape: mustTarGz(append(harness.Scripts(recorder),
			harness.Entry{Name: "link", Link: "/"},
			harness.Entry{Name: "link" + filepath.Join(fixtureDir, symlinkTarget), Body: "escaped\n"})...),
	}
	for name, data := range files {
		p := filepath.Join(fixtureDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	served.put(servedPath, files[recorderTGZ])
	return nil
}

// fixture is the path of a fixture app; fileURL its file:// URL.
func fixture(name string) string { return filepath.Join(fixtureDir, name) }
func fileURL(name string) string { return "file://" + fixture(name) }

// mustTarGz is harness.TarGz for fixtures built in memory (it cannot fail).
func mustTarGz(entries ...harness.Entry) []byte {
	b, err := harness.TarGz(entries...)
	if err != nil {
		panic(err)
	}
	return b
}

func mustZip(files map[string]string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, k := range sortedKeys(files) {
		h := &zip.FileHeader{Name: k, Method: zip.Deflate}
		h.SetMode(0o755)
		w, err := zw.CreateHeader(h)
		if err != nil {
			panic(err)
		}
		if _, err := w.Write([]byte(files[k])); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// tarDir packs a directory's regular files (keeping their modes) as the
// examples Makefile does with tar -czf.
func tarDir(dir string) ([]byte, error) {
	var entries []harness.Entry
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			entries = append(entries, harness.Entry{Name: filepath.ToSlash(rel) + "/"})
			return nil
		}
		b, err := os.ReadFile(p)
		entries = append(entries, harness.Entry{Name: filepath.ToSlash(rel), Body: string(b)})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	return mustTarGz(entries...), nil
}

// appHandler serves fixture apps over http with an ETag and Last-Modified
// (so caches can revalidate) and counts what it was asked per path.
type appHandler struct {
	mu    sync.Mutex
	files map[string][]byte
	stats map[string]*fetchStats
}

type fetchStats struct {
	Requests    int // all GETs
	Conditional int // with If-None-Match or If-Modified-Since
	Full        int // answered 200 with the body
	NotModified int // answered 304
}

func (h *appHandler) put(path string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[path] = data
	h.stats[path] = &fetchStats{}
}

func (h *appHandler) statsOf(path string) fetchStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.stats[path]; s != nil {
		return *s
	}
	return fetchStats{}
}

func (h *appHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	data, ok := h.files[r.URL.Path]
	h.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(data)
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	w.Header().Set("Content-Type", "application/gzip")
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	http.ServeContent(rec, r, "app.tar.gz", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), bytes.NewReader(data))
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats[r.URL.Path]
	s.Requests++
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		s.Conditional++
	}
	switch rec.code {
	case http.StatusOK:
		s.Full++
	case http.StatusNotModified:
		s.NotModified++
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

package soak

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

// httpRecorder writes the run log for runs in real processes (the
// Kubernetes shape's pods): each shard run's script posts its start and
// its end to this server, which runs in the soak's own process, outside
// every fault, and appends one run log line per post before it answers
// (so a run's end is in the log before its task's end reaches the
// scheduler). It also serves the app package the jobs name.
type httpRecorder struct {
	srv *http.Server
	url string
	w   *runlog.Writer
	app []byte

	mu      sync.Mutex
	daemons map[string]bool // DAEMON tasks already started (each tick runs the script again)
	open    map[string]bool // other tasks started and not ended
	lost    map[string]bool // tasks whose runs were recorded lost (lose): their posts are dropped
}

// startHTTPRecorder serves on a free port of 127.0.0.1 and appends to
// the run log at path.
func startHTTPRecorder(path string) (*httpRecorder, error) {
	w, err := runlog.Open(path)
	if err != nil {
		return nil, err
	}
	ln, err := loopback.Listen()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("soak: recorder: %w", err)
	}
	r := &httpRecorder{url: "http://" + ln.Addr().String(), w: w, daemons: map[string]bool{}, open: map[string]bool{}, lost: map[string]bool{}}
	if r.app, err = recorderApp(r.url); err != nil {
		ln.Close()
		w.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /run", r.post)
	mux.HandleFunc("GET /app.tgz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(r.app) })
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *httpRecorder) close() error {
	err := r.srv.Close()
	if werr := r.w.Close(); err == nil {
		err = werr
	}
	return err
}

func (r *httpRecorder) post(rw http.ResponseWriter, req *http.Request) {
	b, err := io.ReadAll(io.LimitReader(req.Body, 16<<10))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	l, daemon, err := parseRunPost(b, time.Now())
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost[l.Task] {
		return
	}
	if daemon { // one start per task; a daemon task ends only when killed
		seen := r.daemons[l.Task]
		r.daemons[l.Task] = true
		if seen || l.Ev == runlog.End {
			return
		}
	} else if l.Ev == runlog.Start {
		r.open[l.Task] = true
	} else {
		delete(r.open, l.Task)
	}
	if err := r.w.Append(l); err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
	}
}

// lose records the runs of tasks that were started and not ended as ended
// TASK_LOST now: their processes were killed with their machine (the
// real node's crash), so they post no end. What such a task posts after
// (a post sent before the kill and answered after it) is dropped. A
// DAEMON's run records no end, as ever; a task that posted no start
// records nothing (it may start yet, on a node that comes back).
func (r *httpRecorder) lose(tasks []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().UTC()
	var errs []error
	for _, t := range tasks {
		if !r.open[t] {
			continue
		}
		delete(r.open, t)
		r.lost[t] = true
		errs = append(errs, r.w.Append(runlog.Line{Ev: runlog.End, At: now, Task: t, State: "TASK_LOST"}))
	}
	return errors.Join(errs...)
}

// parseRunPost reads a script's post: key=value lines (ev, task, job,
// item, source, type, term, queued, nominal, param) as the executor's
// ELASTICJOB_* variables have them. An end reports TASK_FINISHED: the
// script posts it just before it exits 0.
func parseRunPost(b []byte, at time.Time) (l runlog.Line, daemon bool, err error) {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}
	l = runlog.Line{Ev: kv["ev"], At: at.UTC(), Task: kv["task"]}
	if l.Task == "" || (l.Ev != runlog.Start && l.Ev != runlog.End) {
		return l, false, fmt.Errorf("soak: recorder: want ev=start|end and task=ID, got %q", b)
	}
	daemon = kv["type"] == "DAEMON"
	if l.Ev == runlog.End {
		l.State = "TASK_FINISHED"
		return l, daemon, nil
	}
	l.Job, l.Source, l.Param = kv["job"], kv["source"], kv["param"]
	if l.Item, err = strconv.Atoi(kv["item"]); err != nil {
		return l, daemon, fmt.Errorf("soak: recorder: item %q: %w", kv["item"], err)
	}
	if t := kv["term"]; t != "" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return l, daemon, fmt.Errorf("soak: recorder: term %q: %w", t, err)
		}
		l.Term = &n
	}
	if q := kv["queued"]; q != "" {
		if l.Queued, err = time.Parse(time.RFC3339Nano, q); err != nil {
			return l, daemon, fmt.Errorf("soak: recorder: queued %q: %w", q, err)
		}
	}
	if q := kv["nominal"]; q != "" {
		if l.Nominal, err = time.Parse(time.RFC3339Nano, q); err != nil {
			return l, daemon, fmt.Errorf("soak: recorder: nominal %q: %w", q, err)
		}
	}
	return l, daemon, nil
}

// runScript is the app's bin/run.sh: it posts its start, runs for 2 s
// (SOAK_RUN_SECONDS), posts its end and exits 0. A post is retried: a start the
// recorder never got would look like a lost fire.
const runScript = `#!/bin/sh
rec() {
  for i in 1 2 3 4 5; do
    wget -q -O /dev/null --post-data "ev=$1
task=$ELASTICJOB_TASK_ID
job=$ELASTICJOB_JOB_NAME
item=$ELASTICJOB_SHARDING_ITEM
source=$ELASTICJOB_EXECUTION_SOURCE
type=$ELASTICJOB_EXECUTION_TYPE
term=$ELASTICJOB_LEADER_TERM
queued=$ELASTICJOB_QUEUED_AT
nominal=$ELASTICJOB_NOMINAL_AT
param=$ELASTICJOB_JOB_PARAMETER" @URL@/run && return 0
    sleep 1
  done
  echo "recorder unreachable" >&2
}
rec start
sleep "${SOAK_RUN_SECONDS:-2}"
rec end
`

// recorderApp is the app package: bin/run.sh reporting to url.
func recorderApp(url string) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeTarGz(&buf, "bin/run.sh", []byte(strings.ReplaceAll(runScript, "@URL@", url))); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

package trace

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChildWriter is the child process of TestKill9LosesNothingSynced: it
// records events forever, printing how many are durable after each Sync.
func TestChildWriter(t *testing.T) {
	if os.Getenv("EJ_TRACE_CHILD") == "" {
		t.Skip("child process of TestKill9LosesNothingSynced")
	}
	w, err := Open(context.Background(), Options{Dialect: os.Getenv("EJ_TRACE_CHILD_DIALECT"),
		DSN: os.Getenv("EJ_TRACE_CHILD_DSN"), SpoolDir: os.Getenv("EJ_TRACE_CHILD_SPOOL"), BatchSize: 50, SegmentEvents: 300})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; ; i += 100 {
		for _, ev := range statusEvents("kill", i+100)[i:] {
			w.Record(ev)
		}
		if err := w.Sync(context.Background()); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Printf("synced %d\n", i+100)
	}
}

// A writer killed with SIGKILL mid-stream (while writing to the database)
// loses none of the events it had reported durable, and the replay at the
// next Open duplicates nothing.
func TestKill9LosesNothingSynced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dsn, spool := b.dsn(t), filepath.Join(t.TempDir(), "spool")
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildWriter$")
		cmd.Env = append(os.Environ(), "EJ_TRACE_CHILD=1", "EJ_TRACE_CHILD_DIALECT="+b.dialect,
			"EJ_TRACE_CHILD_DSN="+dsn, "EJ_TRACE_CHILD_SPOOL="+spool)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(failsafe, func() { cmd.Process.Kill() })
		defer timer.Stop()
		synced := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "synced "); ok {
				synced, _ = strconv.Atoi(n)
				if synced >= 3000 {
					break
				}
			} else if strings.HasPrefix(line, "error") {
				t.Fatal(line)
			}
		}
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()
		if synced < 3000 {
			t.Fatalf("child reported only %d events synced", synced)
		}
		w, _ := open(t, Options{Dialect: b.dialect, DSN: dsn, SpoolDir: spool})
		mustFlush(t, w)
		have := map[string]bool{}
		for _, id := range ids(t, w) {
			have[id] = true
		}
		for i := range synced {
			if id := NewID("kill", itoa(i)); !have[id] {
				t.Fatalf("event %d of %d synced events lost", i, synced)
			}
		}
		if n := count(t, w, "JOB_STATUS_TRACE_LOG"); n != len(have) || n < synced {
			t.Fatalf("%d rows, %d distinct ids, %d synced", n, len(have), synced)
		}
		if w.Depth() != 0 {
			t.Fatalf("depth %d after replay", w.Depth())
		}
	})
}

// A torn last line (a crash mid-write) is ignored; a corrupt line is
// counted as failed and skipped; the rest is replayed.
func TestReplaySkipsTornAndCorruptLines(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ev := range statusEvents("torn", 3) {
		b, err := encodeEvent(ev.normalize(t0))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	body := lines[0] + "\n{not json\n" + lines[1] + "\n" + lines[2] + "\n" + lines[0][:20]
	if err := os.WriteFile(filepath.Join(spool, fmt.Sprintf("%020d%s", 7, segSuffix)), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	w, _ := open(t, Options{DSN: filepath.Join(t.TempDir(), "trace.db"), SpoolDir: spool})
	mustFlush(t, w) // the replay may already have run: Open starts it at once
	if n := count(t, w, "JOB_STATUS_TRACE_LOG"); n != 3 {
		t.Fatalf("%d rows", n)
	}
	if f := testutilCounter(w.m.failed); f != 1 {
		t.Fatalf("failed %v", f)
	}
	if w.Depth() != 0 || len(segments(t, spool)) != 0 {
		t.Fatalf("depth %d, segments %v", w.Depth(), segments(t, spool))
	}
	// New segments continue after the highest old number.
	w.Record(statusEvents("after", 1)[0])
	if err := w.Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if segs := segments(t, spool); len(segs) == 1 && !strings.HasSuffix(segs[0], fmt.Sprintf("%020d%s", 8, segSuffix)) {
		t.Fatalf("segments %v", segs)
	}
}

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// WaitStarts waits until the file holds at least n starts after `after`
// and returns the first of them.
func WaitStarts(ctx context.Context, file string, n int, after time.Time, timeout time.Duration) (time.Time, error) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(time.Millisecond) {
		var got []time.Time
		for _, ns := range ReadStarts(file) {
			if t := time.Unix(0, ns); t.After(after) {
				got = append(got, t)
			}
		}
		if len(got) >= n {
			return got[0], nil
		}
	}
	return time.Time{}, fmt.Errorf("fewer than %d task starts after %s within %v", n, after.Format("15:04:05.000"), timeout)
}

// The job's whole script: record the wall clock (ns) at process start.
// `date` is one fork+exec after sh starts; the latency scenario measures
// what sh + date add on this machine, so it can be told apart.
const startScript = "#!/bin/sh\ndate +%%s%%N >> %s\n"

// WriteStartScript writes that script into dir as start.sh, appending to
// dir/starts.
func WriteStartScript(dir string) (script, out string, err error) {
	out = filepath.Join(dir, "starts")
	script = filepath.Join(dir, "start.sh")
	return script, out, os.WriteFile(script, []byte(fmt.Sprintf(startScript, out)), 0o755)
}

// ReadStarts returns the recorded start times.
func ReadStarts(path string) []int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var ts []int64
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if v, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64); err == nil {
			ts = append(ts, v)
		}
	}
	return ts
}

// SleepCtx waits d or until ctx ends (its error then).
func SleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

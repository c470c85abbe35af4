package ha

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Built once by TestMain.
var (
	binDir         string // scheduler, executor and mesos-local
	appURL         string // file:// URL of the chaos app
	servicesScript string // scripts/services.sh (own ensembles)
)

// chaosScript is the one app every test runs. Its job parameter is
// "OUT SLEEP [KEY]": it appends a line when it starts and one when it ends
// (or is killed) to OUT/runs.log, sleeping SLEEP seconds in between:
//
//	EVENT UNIXTIME JOB ITEM TASKID SOURCE KEY
//
// The task id is unique per launched task, so it is the run id.
const chaosScript = `#!/bin/sh
set -- $ELASTICJOB_JOB_PARAMETER
OUT=$1 SLEEP=${2:-0} KEY=${3:--}
rec() {
	printf '%s %s %s %s %s %s %s\n' "$1" "$(date +%s.%N)" "$ELASTICJOB_JOB_NAME" "$ELASTICJOB_SHARDING_ITEM" \
		"$ELASTICJOB_TASK_ID" "$ELASTICJOB_EXECUTION_SOURCE" "$KEY" >> "$OUT/runs.log"
}
trap 'kill $! 2>/dev/null; rec killed; exit 143' TERM INT HUP
rec start
sleep "$SLEEP" &
wait $!
rec end
`

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "elasticjob-ha-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ha:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := setup(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "ha setup:", err)
		return 1
	}
	return m.Run()
}

func setup(tmp string) error {
	binDir = filepath.Join(tmp, "bin")
	for _, name := range []string{"scheduler", "executor", "mesos-local"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), "./cmd/"+name)
		cmd.Dir = "../.." // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", name, err, out)
		}
	}
	app, err := tarGz(map[string]string{"bin/chaos.sh": chaosScript})
	if err != nil {
		return err
	}
	p := filepath.Join(tmp, "chaos.tar.gz")
	if err := os.WriteFile(p, app, 0o644); err != nil {
		return err
	}
	appURL = "file://" + p
	servicesScript, err = filepath.Abs("../../scripts/services.sh")
	return err
}

func tarGz(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime}); err != nil {
		return nil, err
	}
	for name, body := range files {
		h := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body)), ModTime: mtime}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sharedEnsemble returns EJ_TEST_ZK_ENSEMBLE (never restarted by these
// tests): without it the test skips, except in CI where it fails.
func sharedEnsemble(t *testing.T) string {
	t.Helper()
	v := os.Getenv("EJ_TEST_ZK_ENSEMBLE")
	if v == "" {
		const how = "run scripts/services.sh start-ensemble DIR and source DIR/ensemble.env"
		if os.Getenv("CI") != "" {
			t.Fatal("EJ_TEST_ZK_ENSEMBLE is not set in CI: " + how)
		}
		t.Skip("EJ_TEST_ZK_ENSEMBLE not set; " + how)
	}
	return v
}

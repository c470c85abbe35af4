//go:build e2e

package ha

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Built once by TestMain.
var (
	binDir         string // scheduler, executor, mesos-local and ejctl
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
	var err error
	if binDir, err = harness.Build("../..", filepath.Join(tmp, "bin"), "scheduler", "executor", "mesos-local", "ejctl"); err != nil {
		return err
	}
	app, err := harness.TarGz(harness.Scripts(map[string]string{"bin/chaos.sh": chaosScript})...)
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

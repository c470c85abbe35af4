//go:build e2e

package realmesos

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/internal/testproxy"
)

// DefaultMesosHome is where the Mesos build is looked for without EJ_MESOS_HOME: beside the
// repository (relative to this package's directory, the test's working directory).
const DefaultMesosHome = "../../../shared/mesos-1.11"

// Set by TestMain.
var (
	mesosHome    string // the Mesos build; "" when there is none (every test skips)
	skipReason   string
	schedulerBin string // DIR/scheduler with DIR/executor beside it
	executorBin  string
	appServer    *httptest.Server // serves the recorder app over http
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	home, err := findMesos()
	if err != nil {
		fmt.Fprintln(os.Stderr, "realmesos:", err)
		return 1
	}
	if home == "" {
		skipReason = "skipped: no Mesos build at ../shared/mesos-1.11 beside the repository (set EJ_MESOS_HOME to a Mesos 1.x build with bin/mesos-master)"
		fmt.Println("realmesos:", skipReason)
		return m.Run()
	}
	mesosHome = home
	tmp, err := os.MkdirTemp("", "ej-realmesos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "realmesos:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := setup(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "realmesos setup:", err)
		return 1
	}
	appServer = httptest.NewServer(apps)
	defer appServer.Close()
	return m.Run()
}

// findMesos returns the build to use, "" when there is none (EJ_MESOS_HOME, when set, must name one).
func findMesos() (string, error) {
	return harness.FindBuild("EJ_MESOS_HOME", []string{DefaultMesosHome}, "bin/mesos-master", "bin/mesos-agent")
}

func setup(tmp string) error {
	binDir, err := harness.Build("../..", filepath.Join(tmp, "bin"), "scheduler", "executor")
	if err != nil {
		return err
	}
	schedulerBin, executorBin = filepath.Join(binDir, "scheduler"), filepath.Join(binDir, "executor")
	if err := ensureLibraries(tmp); err != nil {
		return err
	}
	return buildApps()
}

// ensureLibraries makes sure the Mesos binaries find their shared libraries: when ldd reports
// one missing, the build's start.sh (which installs them with apt-get) is run once.
func ensureLibraries(tmp string) error {
	out, err := exec.Command("ldd", filepath.Join(mesosHome, "bin/mesos-master")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "not found") {
		return nil
	}
	dir := filepath.Join(tmp, "install")
	if out, err := exec.Command(filepath.Join(mesosHome, "start.sh"), dir).CombinedOutput(); err != nil {
		return fmt.Errorf("installing the libraries Mesos needs with %s/start.sh: %v\n%s", mesosHome, err, out)
	}
	if out, err := exec.Command(filepath.Join(mesosHome, "stop.sh"), dir).CombinedOutput(); err != nil {
		return fmt.Errorf("%s/stop.sh: %v\n%s", mesosHome, err, out)
	}
	return nil
}

// requireMesos skips the test with the tier's one message when there is no Mesos build.
func requireMesos(t *testing.T) {
	t.Helper()
	if mesosHome == "" {
		t.Skip(skipReason)
	}
}

// requireZK returns EJ_TEST_ZK (testproxy.ZK) for a test of the tier (skipped without the engine).
func requireZK(t *testing.T) string {
	t.Helper()
	requireMesos(t)
	return testproxy.ZK(t)
}

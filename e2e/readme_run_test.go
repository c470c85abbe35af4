//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// The README says how to run on another port and data directory
// (`http_port=9000 make run DATA_DIR=…`), and that line works: make run's
// recipe passes DATA_DIR as --data-dir, and the scheduler takes http_port
// from the environment.
func TestReadmeOtherPortAndDataDir(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`http_port=([0-9]+) make run DATA_DIR=([^`\\s]+)`").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README does not say how to run on another port and data directory (`http_port=N make run DATA_DIR=DIR`)")
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "\n\t$(BIN)/scheduler --data-dir $(DATA_DIR)\n") {
		t.Fatal("make run's recipe no longer runs $(BIN)/scheduler --data-dir $(DATA_DIR): check the README's line")
	}
	// The same command on a free port and a temp data directory.
	port, data := harness.FreePort(t), filepath.Join(t.TempDir(), "ej-data")
	cmd := exec.Command(schedulerBin, "--data-dir", data, "--embedded-cpus", "1", "--embedded-mem-mb", "1024")
	cmd.Env = append(os.Environ(), "http_port="+strconv.Itoa(port))
	p := harness.Start(t, "scheduler", filepath.Join(t.TempDir(), "scheduler.log"), cmd)
	t.Cleanup(func() {
		p.Stop(t)
		harness.StopEverything(t, filepath.Join(data, "mesos"), schedulerBin, "--data-dir", data)
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p.AwaitReady(t, waitLong, pollEvery, harness.Healthy(http.DefaultClient, base), "the scheduler on http_port=%d", port)
	if entries, err := os.ReadDir(data); err != nil || len(entries) == 0 {
		t.Fatalf("nothing in the data directory %s (%v)", data, err)
	}
}

//go:build e2e

package hostile

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Built once by TestMain (or a deployment's, EJ_HOSTILE_BIN_DIR); the
// binaries' directory lets every uid through (the namespaces' users run
// the executor from it).
var (
	binDir    string
	appServer *httptest.Server
	apps      = &appFiles{files: map[string][]byte{}}
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "elasticjob-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o711); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	binDir = filepath.Join(tmp, "bin")
	if dir := os.Getenv("EJ_HOSTILE_BIN_DIR"); dir != "" {
		// A deployment's own binaries (docs/operations.md): nothing built.
		binDir = dir
	} else if os.Geteuid() == 0 {
		var err error
		if binDir, err = harness.Build("../..", binDir, "scheduler", "executor", "tenant-init"); err != nil {
			fmt.Fprintln(os.Stderr, "hostile setup:", err)
			return 1
		}
	}
	appServer = httptest.NewServer(apps)
	defer appServer.Close()
	return m.Run()
}

// appFiles serves the apps the tests publish, by path.
type appFiles struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (a *appFiles) put(path string, b []byte) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.files[path] = b
	return appServer.URL + path
}

func (a *appFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	b, ok := a.files[r.URL.Path]
	a.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(b)
}

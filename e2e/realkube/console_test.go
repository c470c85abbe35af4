//go:build e2e

package realkube

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ejcloud/elasticjob/engine/kube"
)

// repoRoot is the checkout this package sits in.
var repoRoot = func() string { d, _ := filepath.Abs("../.."); return d }()

// TestClusterPageInBrowser: the console's cluster page, in headless Chromium
// (browser/kube/cluster-page.mjs), lists the node as usable with its free CPUs and memory
// below what it has while our pod runs, and that pod under it as Running.
func TestClusterPageInBrowser(t *testing.T) {
	requireK8s(t)
	node := requireBrowser(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", false)
	s.register(transient("page", "rec", 1, "sleep 120"))
	s.trigger("page")
	var task string
	eventually(t, waitLong, func() bool {
		for _, p := range pods(t, ns, "page") {
			if p.Status.Phase == corev1.PodRunning {
				task = p.Annotations[kube.AnnotationTask]
				return true
			}
		}
		return false
	}, "the job's pod to run")
	shot := filepath.Join(t.TempDir(), "kube-cluster.png")
	if dir := filepath.Join(repoRoot, "browser", "artifacts"); isDir(dir) {
		shot = filepath.Join(dir, "kube-cluster.png") // beside the other tiers' screenshots
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, "browser", "kube", "cluster-page.mjs"))
	cmd.Env = append(os.Environ(), "EJC_BASE="+s.base, "EJC_NODE=127.0.0.1", "EJC_TASK="+task, "EJC_SHOT="+shot)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the cluster page in the browser: %v", err)
	}
	s.must("POST", "/api/job/page/disable", nil)
}

// requireBrowser returns node's path once Chromium and playwright-core (browser/node_modules)
// are there. With the browser tier off (SKIP_BROWSER set, as scripts/test.sh and
// scripts/browser-test.sh read it) the test skips saying so, under CI too. Under
// scripts/test.sh, which installs them beside this tier, it waits for the marker the browser
// tier writes when they are (EJ_BROWSER_READY); run by hand without them, the test skips with
// what to install, and fails under CI, where the browser tier is on.
func requireBrowser(t *testing.T) string {
	t.Helper()
	if v := os.Getenv("SKIP_BROWSER"); v != "" {
		t.Skipf("the browser tier is off (SKIP_BROWSER=%s): the cluster page's browser test needs Chromium and playwright-core, which it installs", v)
	}
	if marker := os.Getenv("EJ_BROWSER_READY"); marker != "" {
		eventually(t, 15*time.Minute, func() bool { _, err := os.Stat(marker); return err == nil },
			"the browser tier to install Chromium and playwright-core (%s)", marker)
		if b, _ := os.ReadFile(marker); strings.TrimSpace(string(b)) != "ready" {
			t.Fatalf("the cluster page's browser test: %s", b)
		}
	}
	var missing []string
	node, err := exec.LookPath("node")
	if err != nil {
		missing = append(missing, "node (apt-get install nodejs)")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		missing = append(missing, "/usr/bin/chromium (apt-get install chromium)")
	}
	if !isDir(filepath.Join(repoRoot, "browser", "node_modules", "playwright-core")) {
		missing = append(missing, "browser/node_modules/playwright-core (cd browser && npm ci)")
	}
	if len(missing) > 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("the cluster page's browser test needs %s", strings.Join(missing, ", "))
		}
		t.Skipf("the cluster page's browser test needs %s (scripts/test.sh installs them)", strings.Join(missing, ", "))
	}
	return node
}

func isDir(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }

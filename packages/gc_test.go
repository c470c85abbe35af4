package packages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

type gcEnv struct {
	t    *testing.T
	clk  *clock.Fake
	reg  *registry.Registry
	host *Host
}

func newGCEnv(t *testing.T) *gcEnv {
	clk := clock.NewFake(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	reg := registry.New(memory.New())
	h, err := New(Options{Dir: filepath.Join(t.TempDir(), "packages"), Key: []byte("0123456789abcdef"), Base: "http://127.0.0.1:8899",
		Apps: RegistryApps(reg), Clock: clk, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return &gcEnv{t: t, clk: clk, reg: reg, host: h}
}

// put stores content and returns its sha256.
func (e *gcEnv) put(content string) string {
	e.t.Helper()
	p, err := e.host.Receive(e.t.Context(), strings.NewReader(content))
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := p.Commit("")
	if err != nil {
		e.t.Fatal(err)
	}
	return info.SHA256
}

// name makes app appName point at sha (creating the app).
func (e *gcEnv) name(appName, sha string) {
	e.t.Helper()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = appName, e.host.URL(sha, "app.tgz"), "run.sh"
	if err := e.reg.Config().AddApp(e.t.Context(), a); err != nil {
		if _, err := e.reg.Config().SetAppURL(e.t.Context(), appName, a.AppURL); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *gcEnv) pass(after time.Duration) {
	e.clk.Advance(after)
	e.host.Sync(e.t.Context())
}

func (e *gcEnv) has(shas ...string) string {
	var b strings.Builder
	for _, s := range shas {
		if e.host.Store().Has(s) {
			b.WriteString("y")
		} else {
			b.WriteString("n")
		}
	}
	return b.String()
}

func TestGCRemovesUnnamedPackagesAfterTheGrace(t *testing.T) {
	e := newGCEnv(t)
	v1, v2, other := e.put("v1"), e.put("v2"), e.put("other app's package")
	e.name("app", v1)
	e.name("other", other)
	e.clk.Advance(2 * time.Hour) // the files are old; the grace counts from when they went unnamed
	e.name("app", v2)            // v1 is replaced
	e.pass(0)
	if got := e.has(v1, v2, other); got != "yyy" {
		t.Fatalf("right after the switch: %s, want every package kept", got)
	}
	e.pass(59 * time.Minute)
	if got := e.has(v1, v2, other); got != "yyy" {
		t.Fatalf("within the grace: %s, want v1 kept (an in-flight launch may fetch it)", got)
	}
	e.pass(time.Minute)
	if got := e.has(v1, v2, other); got != "nyy" {
		t.Fatalf("after the grace: %s, want v1 gone and the named ones kept", got)
	}
}

func TestGCForgetsAPackageNamedAgain(t *testing.T) {
	e := newGCEnv(t)
	v1, v2 := e.put("v1"), e.put("v2")
	e.name("app", v1)
	e.clk.Advance(2 * time.Hour)
	e.pass(0)                // v2 unnamed from now
	e.pass(50 * time.Minute) //
	e.name("app", v2)        // rolled forward: v2 named again, v1 unnamed
	e.pass(20 * time.Minute) // v2 would have passed its grace had it stayed unnamed
	if got := e.has(v1, v2); got != "yy" {
		t.Fatalf("%s, want both kept", got)
	}
	e.name("app", v1) // rolled back within v1's grace
	e.pass(2 * time.Hour)
	e.pass(2 * time.Hour)
	if got := e.has(v1, v2); got != "yn" {
		t.Fatalf("%s, want v1 kept (named), v2 gone", got)
	}
}

func TestGCKeepsAFreshUploadNotYetNamed(t *testing.T) {
	e := newGCEnv(t)
	e.pass(0)
	e.pass(2 * time.Hour) // first sighting long after the store started
	fresh := e.put("just uploaded")
	e.pass(0)
	e.pass(30 * time.Minute)
	if got := e.has(fresh); got != "y" {
		t.Fatal("a package uploaded a moment ago was collected before its app could name it")
	}
	// Re-uploading content already stored refreshes its time: an upload
	// just before the grace ends is kept until its app can name it.
	e.pass(29 * time.Minute)
	if again := e.put("just uploaded"); again != fresh {
		t.Fatal("same content, another address")
	}
	e.pass(2 * time.Minute) // unnamed for 61 minutes, re-stored 2 minutes ago
	if got := e.has(fresh); got != "y" {
		t.Fatal("a package re-uploaded a moment ago was collected")
	}
	e.pass(time.Hour)
	if got := e.has(fresh); got != "n" {
		t.Fatal("an unnamed package outlived its grace")
	}
}

func TestGCRemovesStaleTemporaryFiles(t *testing.T) {
	e := newGCEnv(t)
	dir := e.host.Store().dir
	stale := filepath.Join(dir, tmpPrefix+"crashed")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := e.clk.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, tmpPrefix+"receiving")
	if err := os.WriteFile(live, []byte("in progress"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := e.clk.Now()
	if err := os.Chtimes(live, now, now); err != nil {
		t.Fatal(err)
	}
	e.pass(0)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temporary file: %v, want removed", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("an upload in progress lost its file: %v", err)
	}
}

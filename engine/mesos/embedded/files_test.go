package embedded

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
)

// TestFilesReadServesSandboxesOnly plants, in a running executor's
// sandbox, what a tenant's task can: its task's stdout replaced by links
// to another executor's sandbox and to the agent's checkpoints (which
// hold TaskInfos and their secret-fetch tokens), a FIFO where a log is
// read. None of it is served; the agent's own files outside every
// sandbox are not either, nor the sandbox of an executor it never ran.
func TestFilesReadServesSandboxesOnly(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, checkpointing("fw-files"))
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.update("t1")
	s.launch(s.offer(), taskInfo(c, "t2", "hang", execInfo(t, "e2", "1", 0.1, 32), 1, 64))
	s.update("t2")
	var mine, theirs string
	for _, e := range c.Snapshot().Executors {
		if e.ID == "e1" {
			mine = e.Directory
		} else {
			theirs = e.Directory
		}
	}
	readFile(t, c, filepath.Join(mine, "stdout"))
	readFile(t, c, filepath.Join(theirs, "stdout"))
	records, _ := filepath.Glob(filepath.Join(c.cfg.WorkDir, "meta", "slaves", "*", "frameworks", "*", "executors", "*", "runs", "*", "tasks", "t2.records"))
	if len(records) != 1 {
		t.Fatalf("checkpointed records of t2: %v", records)
	}
	tasks := filepath.Join(mine, "tasks", "t1")
	if err := os.MkdirAll(tasks, 0o755); err != nil {
		t.Fatal(err)
	}
	plant := map[string]string{
		"stdout": filepath.Join(theirs, "stdout"),
		"stderr": records[0],
		"rel":    "../../../e2/runs/latest/stdout",
		"passwd": "/etc/passwd",
	}
	for name, target := range plant {
		if err := os.Symlink(target, filepath.Join(tasks, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Dir(theirs), filepath.Join(mine, "other-runs")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tasks, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(tasks, "stdout"), filepath.Join(tasks, "stderr"), filepath.Join(tasks, "rel"),
		filepath.Join(tasks, "passwd"), filepath.Join(mine, "other-runs", filepath.Base(theirs), "stdout"),
		records[0], filepath.Join(c.cfg.WorkDir, "tenants.json"), "/etc/passwd",
		mine + "/../" + filepath.Base(mine) + "/stdout",            // not clean
		filepath.Join(filepath.Dir(mine), "made-up-run", "stdout"), // no such executor run
	} {
		assertFilesStatus(t, c, p, http.StatusNotFound)
	}
	assertFilesStatus(t, c, filepath.Join(tasks, "fifo"), http.StatusBadRequest)
	assertFilesStatus(t, c, tasks, http.StatusBadRequest)
	if got := filesRead(t, c, filepath.Join(mine, "stdout"), "0", ""); got.Data == "" {
		t.Errorf("the executor's own stdout: empty")
	}
	// Browsing: the task's directory lists the links as links; a linked
	// directory, the checkpoints and a path outside are not listed.
	var entries []fileEntry
	if code := browse(t, c, tasks, &entries); code != http.StatusOK {
		t.Fatalf("browse %s: %d", tasks, code)
	}
	modes := map[string]string{}
	for _, e := range entries {
		modes[filepath.Base(e.Path)] = e.Mode
	}
	if len(entries) != 5 || modes["stdout"][0] != 'L' || modes["fifo"][0] != 'p' {
		t.Errorf("browse %s: %+v", tasks, entries)
	}
	for _, p := range []string{filepath.Join(mine, "other-runs"), filepath.Join(mine, "other-runs", filepath.Base(theirs)),
		filepath.Dir(records[0]), c.cfg.WorkDir, "/etc"} {
		if code := browse(t, c, p, nil); code != http.StatusNotFound {
			t.Errorf("browse %s: %d, want 404", p, code)
		}
	}
}

func browse(t *testing.T, c *Cluster, path string, out *[]fileEntry) int {
	t.Helper()
	resp, err := http.Get(c.URL() + "/files/browse?" + url.Values{"path": {path}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// TestFilesReadRefusesAnotherOwnersFile: in a sandbox of a tenant's uid,
// a file of another owner (a hard link to root's file, which a tenant
// could make of a file it may read) is not served.
func TestFilesReadRefusesAnotherOwnersFile(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give the sandbox to another uid")
	}
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.update("t1")
	dir := c.Snapshot().Executors[0].Directory
	readFile(t, c, filepath.Join(dir, "stdout"))
	const uid = 1879048203
	if err := os.Lchown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("tenant's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(filepath.Join(dir, "mine"), uid, uid); err != nil {
		t.Fatal(err)
	}
	if got := filesRead(t, c, filepath.Join(dir, "mine"), "0", ""); got.Data != "tenant's" {
		t.Errorf("the tenant's own file: %q", got.Data)
	}
	// stdout is still root's: another owner than the sandbox's.
	assertFilesStatus(t, c, filepath.Join(dir, "stdout"), http.StatusNotFound)
}

// TestCheckpointsAreTheAgentsAlone: the checkpoints (every TaskInfo with
// its secret-fetch token) are under a directory of mode 0700, also in a
// work directory an earlier version left at 0755, and their files 0600.
func TestCheckpointsAreTheAgentsAlone(t *testing.T) {
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, func(cfg *Config) { cfg.WorkDir = work })
	s := subscribe(t, c, checkpointing("fw-meta"))
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	s.update("t1")
	if st, err := os.Stat(filepath.Join(work, "meta")); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("meta: %v %v, want mode 0700", st.Mode(), err)
	}
	records, _ := filepath.Glob(filepath.Join(work, "meta", "slaves", "*", "frameworks", "*", "executors", "*", "runs", "*", "tasks", "t1.records"))
	if len(records) != 1 {
		t.Fatalf("records: %v", records)
	}
	if st, err := os.Stat(records[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v, want mode 0600", records[0], st.Mode(), err)
	}
}

// TestCollectGarbageFollowsNoLink: a collected sandbox holding links a
// tenant planted (to a directory outside, to a file of the agent's, a
// directory swapped for a link) goes without anything outside it.
func TestCollectGarbageFollowsNoLink(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	work, outside := t.TempDir(), t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("not the tenant's"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := oldSandbox(t, work, "old-agent", clk.Now().Add(-100*time.Hour))
	for name, target := range map[string]string{"dir-link": outside, "file-link": keep, "tasks/t/stdout": keep} {
		if err := os.Symlink(target, filepath.Join(old, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, clk.Now().Add(-100*time.Hour), clk.Now().Add(-100*time.Hour)); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, func(cfg *Config) {
		cfg.WorkDir, cfg.Clock, cfg.DiskUsage = work, clk, (&disk{}).get
		cfg.GCDelay = time.Hour
	})
	// The agent's own collection at start may take the sandbox first (one collection runs at
	// a time): either way it is gone once this one returns.
	if n := c.CollectGarbage(); exists(old) {
		t.Fatalf("collected %d, the old sandbox still there", n)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "not the tenant's" {
		t.Fatalf("the file outside: %q %v", b, err)
	}
}

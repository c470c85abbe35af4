package embedded

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// du counts allocated blocks, a hard-linked file once, and follows no
// link: a symlink to a big file outside, or a directory link, adds
// nothing; the budget bounds the entries read.
func TestDuCountsWithoutFollowingLinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(p string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "big"), 8<<20)
	write(filepath.Join(root, "a"), 1<<20)
	write(filepath.Join(root, "d", "e", "b"), 2<<20)
	if err := os.Link(filepath.Join(root, "a"), filepath.Join(root, "d", "a-again")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "big"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	used, short, err := du(root, 1000)
	if err != nil || short != "" {
		t.Fatalf("du: %v unmeasured %q", err, short)
	}
	if used < 3<<20 || used > 3<<20+256<<10 {
		t.Errorf("du %d bytes, want about 3 MB (a once, b; no link followed)", used)
	}
	if _, short, _ := du(root, 2); short == "" {
		t.Error("a budget of 2 entries read the whole tree")
	}
	if _, _, err := du(filepath.Join(root, "dirlink"), 1000); err == nil {
		t.Error("du followed a link given as the sandbox")
	}
}

// A sandbox over its disk limit gets its executor killed, and its tasks
// fail with REASON_CONTAINER_LIMITATION_DISK and a message that says so.
func TestSandboxOverItsDiskLimitIsKilled(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.SandboxDiskMB = 1 })
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("t1"))
	if n := c.WatchDisk(); n != 0 {
		t.Fatalf("killed %d executors under their limit", n)
	}
	dir := c.Snapshot().Executors[0].Directory
	if err := os.WriteFile(filepath.Join(dir, "fill"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors, want the one over its limit", n)
	}
	st := s.update("t1")
	if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK ||
		!strings.Contains(st.GetMessage(), "of its 1 MB disk limit") {
		t.Fatalf("t1: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
}

// Below the headroom on the work directory's file system, the executor
// with the largest sandbox is killed, whatever its limit, when it holds at
// least the headroom: the registry's commits need the space.
func TestLargestSandboxKilledBelowHeadroom(t *testing.T) {
	var free int64 = 10 << 30
	c := newCluster(t, func(cfg *Config) {
		cfg.DiskHeadroomMB = 1
		cfg.DiskFree = func(string) (int64, error) { return free, nil }
	})
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "small", "hang", execInfo(t, "e1", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("small"))
	s.launch(s.freshOffer(), taskInfo(c, "big", "hang", execInfo(t, "e2", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("big"))
	free = 512 << 10
	if n := c.WatchDisk(); n != 0 {
		t.Fatalf("killed %d while no sandbox holds the headroom (the disk filled otherwise)", n)
	}
	for _, ex := range c.Snapshot().Executors {
		if ex.ID == "e2" {
			if err := os.WriteFile(filepath.Join(ex.Directory, "fill"), make([]byte, 2<<20), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	free = 10 << 30
	if n := c.WatchDisk(); n != 0 {
		t.Fatalf("killed %d with the disk free", n)
	}
	free = 512 << 10
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors below the headroom, want 1", n)
	}
	st := s.update("big")
	if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK ||
		!strings.Contains(st.GetMessage(), "below the 1 MB the scheduler keeps free") {
		t.Fatalf("big: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
}

// A namespace whose live sandboxes together pass its disk cap loses the
// executor with its largest sandbox; another namespace's is left alone.
func TestNamespaceDiskCap(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.NamespaceDiskMB = 2 })
	s := subscribe(t, c, frameworkInfo())
	for i, id := range []string{"a", "b", "other"} {
		offer := s.offer
		if i > 0 {
			offer = s.freshOffer
		}
		s.launch(offer(), taskInfo(c, id, "hang", execInfo(t, "e-"+id, "1", 0.1, 32), 0.1, 32))
		s.ack(s.update(id))
	}
	fill := map[string]int{"e-a": 1 << 20, "e-b": 2 << 20, "e-other": 1 << 20}
	c.mu.Lock()
	for _, e := range c.live {
		e.nsGroup = nsPrefix + "pay"
		if e.id == "e-other" {
			e.nsGroup = nsPrefix + "ops"
		}
		if err := os.WriteFile(filepath.Join(e.dir, "fill"), make([]byte, fill[e.id]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Unlock()
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors, want pay's largest", n)
	}
	st := s.update("b")
	if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK ||
		!strings.Contains(st.GetMessage(), "of its 2 MB disk cap") {
		t.Fatalf("b: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
}

// A namespace's app cache counts with its sandboxes: a team that fills
// its cache passes its own disk cap, and on a disk under the headroom it
// is its own sandbox that is stopped, not another team's larger one.
func TestAppCacheCountsForItsNamespace(t *testing.T) {
	var free int64 = 10 << 30
	c := newCluster(t, func(cfg *Config) {
		cfg.DiskHeadroomMB = 1
		cfg.DiskFree = func(string) (int64, error) { return free, nil }
	})
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "pay", "hang", execInfo(t, "e-pay", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("pay"))
	s.launch(s.freshOffer(), taskInfo(c, "search", "hang", execInfo(t, "e-search", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("search"))
	caches := t.TempDir()
	c.mu.Lock()
	c.cacheRoot = caches
	for _, e := range c.live {
		e.nsGroup = nsPrefix + strings.TrimPrefix(e.id, "e-")
		size := 64 << 10 // search's sandbox: small
		if e.id == "e-pay" {
			size = 3 << 20 // pay's: the largest sandbox, within its limits
		}
		if err := os.WriteFile(filepath.Join(e.dir, "fill"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Unlock()
	// search fills its app cache, which its executor's mounts show it.
	if err := os.MkdirAll(filepath.Join(caches, "tenant-search"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(caches, "tenant-search", "blob"), make([]byte, 5<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	free = 512 << 10
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors below the headroom, want search's", n)
	}
	st := s.update("search")
	if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK ||
		!strings.Contains(st.GetMessage(), "app cache used 5 MB") && !strings.Contains(st.GetMessage(), "the cache 5 MB") {
		t.Fatalf("search: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
	for _, tk := range c.Snapshot().Tasks {
		if tk.ID == "pay" && tk.State != "TASK_RUNNING" {
			t.Fatalf("pay's task, whose sandbox is the largest, is %s", tk.State)
		}
	}
}

// The cache counts against the namespace's disk cap too.
func TestAppCacheCountsAgainstTheNamespaceCap(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.NamespaceDiskMB = 2 })
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "search", "hang", execInfo(t, "e-search", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("search"))
	caches := t.TempDir()
	c.mu.Lock()
	c.cacheRoot = caches
	for _, e := range c.live {
		e.nsGroup = nsPrefix + "search"
	}
	c.mu.Unlock()
	if n := c.WatchDisk(); n != 0 {
		t.Fatalf("killed %d under the cap", n)
	}
	if err := os.MkdirAll(filepath.Join(caches, "tenant-search"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(caches, "tenant-search", "blob"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors, want search's", n)
	}
	st := s.update("search")
	if st.GetState() != mesos.TASK_FAILED || !strings.Contains(st.GetMessage(), "of its 2 MB disk cap (the cache 3 MB)") {
		t.Fatalf("search: %s %q", st.GetState(), st.GetMessage())
	}
}

// A namespace's own disk cap (its record's) replaces the scheduler's:
// ops, whose record sets no cap, keeps a sandbox that pay, under the
// scheduler's 1 MB, may not.
func TestNamespaceOwnDiskCap(t *testing.T) {
	var asked []string
	c := newCluster(t, func(cfg *Config) {
		cfg.NamespaceDiskMB = 1
		cfg.NamespaceCaps = func(tenant string) NamespaceCaps {
			asked = append(asked, tenant)
			if tenant == "ops" {
				return NamespaceCaps{DiskMB: 0}
			}
			return NamespaceCaps{DiskMB: 1}
		}
	})
	s := subscribe(t, c, frameworkInfo())
	for i, id := range []string{"pay", "ops"} {
		offer := s.offer
		if i > 0 {
			offer = s.freshOffer
		}
		s.launch(offer(), taskInfo(c, id, "hang", execInfo(t, "e-"+id, "1", 0.1, 32), 0.1, 32))
		s.ack(s.update(id))
	}
	c.mu.Lock()
	for _, e := range c.live {
		e.nsGroup = nsPrefix + strings.TrimPrefix(e.id, "e-")
		if err := os.WriteFile(filepath.Join(e.dir, "fill"), make([]byte, 2<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Unlock()
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors, want pay's", n)
	}
	if st := s.update("pay"); st.GetState() != mesos.TASK_FAILED || !strings.Contains(st.GetMessage(), "of its 1 MB disk cap") {
		t.Fatalf("pay: %s %q", st.GetState(), st.GetMessage())
	}
	if !slices.Contains(asked, "ops") || !slices.Contains(asked, "pay") {
		t.Fatalf("the caps asked for %v", asked)
	}
}

//go:build linux

package embedded

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"golang.org/x/sys/unix"
)

// nestDirs makes a chain of depth directories below dir (each opened
// relative to the last, so no path grows past PATH_MAX) and a file of size
// bytes at its bottom, as a task can in its sandbox.
func nestDirs(t *testing.T, dir string, depth, size int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, "hidden", unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
}

// openFDs is how many descriptors this process holds.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// withFDLimit runs f with the process's descriptor limit n above what it
// holds, as a scheduler near its limit is.
func withFDLimit(t *testing.T, n int, f func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := old
	lim.Cur = uint64(openFDs(t) + n)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			t.Fatal(err)
		}
	}()
	f()
}

// TestHostileDeepTreeIsNotMeasuredThrough: du holds a descriptor for each
// directory on its way down, in the scheduler's process. A task's chain
// of directories deeper than the descriptors the process has left made
// every open of the scheduler fail while the walk was at the bottom, and
// hid what lay below from the limits; du now stops at maxDuDepth and says
// the tree could not be measured, and measures a tree at that depth whole.
func TestHostileDeepTreeIsNotMeasuredThrough(t *testing.T) {
	deep := t.TempDir()
	nestDirs(t, deep, 2000, 4<<20)
	withFDLimit(t, maxDuDepth+64, func() {
		used, short, err := du(deep, duBudget)
		if err != nil || !strings.Contains(short, "deep") {
			t.Fatalf("du of 2000 nested directories: %d bytes, unmeasured %q, %v; want it refused as too deep", used, short, err)
		}
	})
	atBound := t.TempDir()
	nestDirs(t, atBound, maxDuDepth, 4<<20)
	used, short, err := du(atBound, duBudget)
	if err != nil || short != "" || used < 4<<20 {
		t.Fatalf("du of %d nested directories: %d bytes, unmeasured %q, %v; want the file at the bottom counted", maxDuDepth, used, short, err)
	}
}

// TestHostileUnmeasurableSandboxIsKilled: a sandbox the watcher cannot
// measure (a task hid its data below more directories than a pass goes
// down) is stopped as one over its limit, saying why, though what the
// watcher saw of it is far below the limit.
func TestHostileUnmeasurableSandboxIsKilled(t *testing.T) {
	c := newCluster(t, func(cfg *Config) { cfg.SandboxDiskMB = 1000 })
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("t1"))
	nestDirs(t, c.Snapshot().Executors[0].Directory, maxDuDepth+1, 1<<20)
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors, want the one whose sandbox could not be measured", n)
	}
	st := s.update("t1")
	if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK ||
		!strings.Contains(st.GetMessage(), "could not be measured: directories more than 256 deep") {
		t.Fatalf("t1: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
}

// TestHostileDeepSandboxIsCollected: the collector removes a terminated
// sandbox holding a chain of directories far deeper than the descriptors
// the scheduler's process has left (os.RemoveAll holds one per level: it
// failed, the sandbox stayed on the disk for good and every collection
// ran the process out of descriptors again), and nothing outside it.
func TestHostileDeepSandboxIsCollected(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	work, outside := t.TempDir(), t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("not the tenant's"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, func(cfg *Config) {
		cfg.WorkDir, cfg.Clock, cfg.DiskUsage = work, clk, (&disk{}).get
		cfg.GCDelay = time.Hour
	})
	c.CollectGarbage() // after the collection at start
	ended := clk.Now().Add(-100 * time.Hour)
	old := oldSandbox(t, work, "old-agent", ended)
	nestDirs(t, old, 3000, 1<<10)
	nestDirs(t, filepath.Join(old, "tasks"), 40, 1<<10)
	if err := os.Symlink(outside, filepath.Join(old, "tasks", "t", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(old, ended, ended); err != nil {
		t.Fatal(err)
	}
	withFDLimit(t, 128, func() {
		if n := c.CollectGarbage(); n != 1 || exists(old) {
			t.Fatalf("collected %d, the deep sandbox still there: %v", n, exists(old))
		}
	})
	if b, err := os.ReadFile(keep); err != nil || string(b) != "not the tenant's" {
		t.Fatalf("the file outside: %q %v", b, err)
	}
}

// TestHostileUnmeasurableCacheStopsItsOwnNamespace: a team that hides
// what it writes in its app cache below more directories than a pass goes
// down is stopped (its namespace's largest sandbox), saying why, and the
// other team's larger sandbox is left running, disk free or not.
func TestHostileUnmeasurableCacheStopsItsOwnNamespace(t *testing.T) {
	c := newCluster(t, func(cfg *Config) {
		cfg.DiskHeadroomMB = 1
		cfg.DiskFree = func(string) (int64, error) { return 10 << 30, nil }
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
		if e.id == "e-pay" {
			if err := os.WriteFile(filepath.Join(e.dir, "fill"), make([]byte, 3<<20), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.mu.Unlock()
	cache := filepath.Join(caches, "tenant-search")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	nestDirs(t, cache, maxDuDepth+1, 1<<20)
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors, want search's", n)
	}
	st := s.update("search")
	if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK ||
		!strings.Contains(st.GetMessage(), "app cache could not be measured") {
		t.Fatalf("search: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
	for _, tk := range c.Snapshot().Tasks {
		if tk.ID == "pay" && tk.State != "TASK_RUNNING" {
			t.Fatalf("pay's task is %s", tk.State)
		}
	}
}

// TestHostileLinksWhereTheCollectorFlattens: links a tenant plants where the
// collector moves directories up (at the flattening depth, and under the
// names it moves them to, planted first) are moved or removed as links:
// nothing outside the sandbox is followed into.
func TestHostileLinksWhereTheCollectorFlattens(t *testing.T) {
	work, outside := t.TempDir(), t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("not the tenant's"), 0o600); err != nil {
		t.Fatal(err)
	}
	sandbox := filepath.Join(work, "sandbox")
	if err := os.Mkdir(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	nestDirs(t, sandbox, 3*rmDepth, 1<<10)
	// one link beside the directory at each depth around the one flattened
	p := sandbox
	for depth := 1; depth <= rmDepth+2; depth++ {
		p = filepath.Join(p, "d")
		if depth >= rmDepth-2 {
			if err := os.Symlink(outside, filepath.Join(p, "link")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 4 { // the names the flattened directories take, taken first
		if err := os.Symlink(outside, filepath.Join(sandbox, ".flattened-"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeTree(sandbox); err != nil {
		t.Fatal(err)
	}
	if exists(sandbox) {
		t.Fatal("the sandbox is still there")
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "not the tenant's" {
		t.Fatalf("the file outside: %q %v", b, err)
	}
	if ents, err := os.ReadDir(outside); err != nil || len(ents) != 1 {
		t.Fatalf("outside now holds %v (%v)", ents, err)
	}
}

// held waits for the MESSAGE of a task that holds its removed file.
func (s *sched) held() {
	s.t.Helper()
	if m := s.next(scheduler.Event_MESSAGE).Message; string(m.Data) != "held" {
		s.t.Fatalf("message %q, want held", m.Data)
	}
}

// heldOpen keeps what holdRemoved holds from the garbage collector for the
// executor's life (an *os.File's finalizer would close it).
var heldOpen []any

// holdRemoved is a task hiding 2 MB from du: a file of the sandbox (the
// working directory) written, removed, and kept open, or mapped with its
// descriptor closed.
func holdRemoved(mapped bool) error {
	f, err := os.OpenFile("hidden", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(bytes.Repeat([]byte{1}, 2<<20)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Remove("hidden"); err != nil {
		return err
	}
	if !mapped {
		heldOpen = append(heldOpen, f)
		return nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 2<<20, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	heldOpen = append(heldOpen, m)
	return f.Close()
}

// TestHostileRemovedFilesStillCount: a task writes into its sandbox,
// removes the file and keeps it open (or mapped): its blocks stay taken
// and no directory shows them. The watcher counted only what du saw: the
// task wrote past its limit unseen, and on a disk short of its headroom
// the largest sandbox it saw, another team's, was stopped instead. The
// files a container's processes hold removed now count as its sandbox's.
func TestHostileRemovedFilesStillCount(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"hide", "hidemap", "hide confined"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "hidemap" && os.Geteuid() != 0 {
				t.Skip("/proc/PID/map_files is root's (the agent is, with tenants)")
			}
			confined := strings.HasSuffix(mode, " confined")
			if err := tenant.Probe(); confined && err != nil {
				t.Skip(err)
			}
			const uid = 1879050100
			c := newCluster(t, func(cfg *Config) {
				cfg.SandboxDiskMB = 1
				if confined { // the executor in a PID namespace of its own, as its tenant
					cfg.Tenancy = &Tenancy{Init: exe, UIDs: tenant.Range{Lo: uid, Hi: uid + 9}, ReadOnly: []string{filepath.Dir(exe)},
						RangeLockDir: t.TempDir()}
				}
			})
			s := subscribe(t, c, frameworkInfo())
			// 96 MB: a confined one's init is this test binary too (as in TestTenantExecutorConfined).
			s.launch(s.offer(), taskInfo(c, "t1", strings.TrimSuffix(mode, " confined"), execInfo(t, "e1", "1", 0.1, 96), 0.1, 32))
			s.ack(s.update("t1"))
			s.held()
			dir := c.Snapshot().Executors[0].Directory
			if used, _, err := du(dir, duBudget); err != nil || used >= 1<<20 {
				t.Fatalf("du of the sandbox: %d bytes, %v; the file should be out of its sight", used, err)
			}
			if n := c.WatchDisk(); n != 1 {
				t.Fatalf("killed %d executors, want the one holding 2 MB removed past its 1 MB", n)
			}
			st := s.update("t1")
			if st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK ||
				!strings.Contains(st.GetMessage(), "in files removed that its processes hold open") {
				t.Fatalf("t1: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
			}
		})
	}

	// Below the headroom: the hiding sandbox, not the larger one du sees, is stopped.
	var free int64 = 10 << 30
	c := newCluster(t, func(cfg *Config) {
		cfg.DiskHeadroomMB = 1
		cfg.DiskFree = func(string) (int64, error) { return free, nil }
	})
	s := subscribe(t, c, frameworkInfo())
	s.launch(s.offer(), taskInfo(c, "honest", "hang", execInfo(t, "e1", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("honest"))
	s.launch(s.freshOffer(), taskInfo(c, "hider", "hide", execInfo(t, "e2", "1", 0.1, 32), 0.1, 32))
	s.ack(s.update("hider"))
	s.held()
	for _, ex := range c.Snapshot().Executors {
		if ex.ID == "e1" {
			if err := os.WriteFile(filepath.Join(ex.Directory, "data"), make([]byte, 3<<19), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	free = 512 << 10
	if n := c.WatchDisk(); n != 1 {
		t.Fatalf("killed %d executors below the headroom, want 1", n)
	}
	if st := s.update("hider"); st.GetState() != mesos.TASK_FAILED || st.GetReason() != mesos.REASON_CONTAINER_LIMITATION_DISK {
		t.Fatalf("hider: %s %s %q, want it stopped for the disk", st.GetState(), st.GetReason(), st.GetMessage())
	}
}

package embedded

import (
	"os"
	"path/filepath"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// A task's records are appended through one file it keeps open from its
// first record until its end is acknowledged; then the file is closed and
// removed. What is appended reads back as it did through a file opened
// per record.
func TestTaskRecordsFileOpenUntilRemoved(t *testing.T) {
	work := t.TempDir()
	c := newCluster(t, func(cfg *Config) { cfg.WorkDir = work })
	s := subscribe(t, c, checkpointing("fw-records"))
	s.launch(s.offer(), taskInfo(c, "t1", "hang", execInfo(t, "e1", "1", 0.1, 32), 1, 64))
	st := s.update("t1")
	if st.GetState() != mesos.TASK_RUNNING {
		t.Fatalf("t1: %s %s", st.GetState(), st.GetMessage())
	}
	s.ack(st)
	paths, _ := filepath.Glob(filepath.Join(work, "meta", "slaves", "*", "frameworks", "*", "executors", "*", "runs", "*", "tasks", "t1.records"))
	if len(paths) != 1 {
		t.Fatalf("records: %v", paths)
	}
	p := paths[0]
	eventually(t, "the acknowledgement recorded", func() bool {
		for _, r := range readRecords(p) {
			if len(r.Ack) > 0 {
				return true
			}
		}
		return false
	})
	rs := readRecords(p)
	if len(rs) < 4 || len(rs[0].Task) == 0 || !rs[1].Launched {
		t.Fatalf("records read back: %+v, want the task, its delivery, its updates and their acknowledgements", rs)
	}
	if n := openCount(t, p); n != 1 {
		t.Fatalf("%d descriptors open on the running task's records, want 1", n)
	}
	s.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: "t1"}}})
	s.ack(s.update("t1"))
	eventually(t, "the ended task's records closed and removed", func() bool {
		_, err := os.Stat(p)
		return os.IsNotExist(err) && openCount(t, p) == 0
	})
}

// openCount is how many of this process's descriptors are open on p.
func openCount(t *testing.T, p string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && (l == p || l == p+" (deleted)") {
			n++
		}
	}
	return n
}

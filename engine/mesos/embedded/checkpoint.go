package embedded

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// The agent checkpoints what it runs for frameworks that ask for it
// (FrameworkInfo.checkpoint), as a Mesos agent does, under
// WORKDIR/meta/slaves/<agentID>:
//
//	alive                                    touched every second: the agent's last sign of life
//	frameworks/<fw>/framework.info           FrameworkInfo (protobuf)
//	frameworks/<fw>/executors/<ex>/runs/<container>/
//	    executor.info                        ExecutorInfo (protobuf), before the process starts
//	    forked.pid                           pid, start time and boot id, once it started
//	    completed                            the executor ended (its tasks may still have updates to deliver)
//	    tasks/<task>.records                 one JSON line each: the TaskInfo before the executor hears
//	                                         of it, its delivery, each status update before it is
//	                                         forwarded, each acknowledgement
//
// A task's records go when its terminal update is acknowledged, a run's
// directory when it completed and has no task left, a framework's when it
// is torn down. Files are written whole (temporary file, then rename) or
// appended a line at a time, without fsync: they must survive the agent's
// process (kill -9), not the machine, whose reboot ends every executor
// anyway (the boot id tells).
type checkpoint struct {
	dir string // meta/slaves/<agentID>
	log *slog.Logger
}

// record is one line of a task's records.
type record struct {
	Task     []byte `json:"task,omitempty"`     // the TaskInfo (protobuf), the first line
	Update   []byte `json:"update,omitempty"`   // a TaskStatus (protobuf), before it is forwarded
	Executor bool   `json:"executor,omitempty"` // the update came from the executor
	Ack      []byte `json:"ack,omitempty"`      // the uuid of an acknowledged update
	Launched bool   `json:"launched,omitempty"` // the task was sent to the executor
	Group    bool   `json:"group,omitempty"`    // the task came in a LAUNCH_GROUP
}

// forked is forked.pid: which process the executor is.
type forked struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"` // start time in clock ticks since boot (pid reuse)
	Boot  string `json:"boot"`  // boot id (a reboot ended every executor)
	// Token is the SHA-256 (hex) of the executor's token: a restarted
	// agent accepts the recovered executor's calls with it (auth.go).
	Token string `json:"token,omitempty"`
}

func newCheckpoint(workDir, agentID string, log *slog.Logger) (*checkpoint, error) {
	meta := filepath.Join(workDir, "meta")
	// The records hold every TaskInfo with its secret-fetch token: root's
	// (or the agent's user's) alone. Chmod too: a work directory of an
	// earlier version has meta/ at 0755.
	if err := os.MkdirAll(meta, 0o700); err != nil {
		return nil, fmt.Errorf("local: checkpoints: %w", err)
	}
	if err := os.Chmod(meta, 0o700); err != nil {
		return nil, fmt.Errorf("local: checkpoints: %w", err)
	}
	return &checkpoint{dir: filepath.Join(meta, "slaves", agentID), log: log}, nil
}

func (k *checkpoint) frameworkDir(fwID string) string {
	return filepath.Join(k.dir, "frameworks", fwID)
}

func (k *checkpoint) runDir(fwID, execID, containerID string) string {
	return filepath.Join(k.frameworkDir(fwID), "executors", execID, "runs", containerID)
}

func (k *checkpoint) alivePath() string { return filepath.Join(k.dir, "alive") }

// warn logs a checkpoint that failed: what it would have recovered is lost
// if the agent stops before the next write succeeds.
func (k *checkpoint) warn(what string, err error) {
	if err != nil {
		k.log.Warn("checkpoint failed: a restart will not recover it", "what", what, "err", err)
	}
}

// replaceFile replaces path with data (temporary file, then rename).
func replaceFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// appendRecord adds one line to t's records in a single write, through
// the file t keeps open from its first record to its removal: a task has
// six or so records, and opening its file by its path (a dozen directories
// deep) cost more than writing them.
func appendRecord(t *task, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if t.records == nil {
		f, err := os.OpenFile(taskMeta(t), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		t.records = f
	}
	_, err = t.records.Write(append(b, '\n'))
	return err
}

// closeRecords closes the file t's records are appended through; the next
// record, if any, opens it again by its path.
func (t *task) closeRecords() {
	if t.records != nil {
		_ = t.records.Close()
		t.records = nil
	}
}

// marshaler is a protobuf message of mesos-go.
type marshaler interface{ Marshal() ([]byte, error) }

func writeProto(path string, m marshaler) error {
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	return replaceFile(path, b)
}

// framework records a framework's info (on its executors' launches and on
// every subscription, so a changed FrameworkInfo is recovered).
func (k *checkpoint) framework(fw *framework) {
	k.warn("framework "+fw.id, writeProto(filepath.Join(k.frameworkDir(fw.id), "framework.info"), &fw.info))
}

// executor records an executor run before its process starts.
func (k *checkpoint) executor(e *executor) {
	k.warn("executor "+e.id, writeProto(filepath.Join(e.meta, "executor.info"), &e.info))
}

// forked records the executor's process once it started.
func (k *checkpoint) forked(e *executor, f forked) {
	b, err := json.Marshal(f)
	if err == nil {
		err = replaceFile(filepath.Join(e.meta, "forked.pid"), b)
	}
	k.warn("executor pid "+e.id, err)
}

// completed marks the executor's end; the run goes with its last task.
func (k *checkpoint) completed(e *executor) {
	if len(e.tasks) == 0 {
		k.warn("executor run "+e.id, os.RemoveAll(e.meta))
		return
	}
	k.warn("executor end "+e.id, replaceFile(filepath.Join(e.meta, "completed"), nil))
}

func taskMeta(t *task) string {
	return filepath.Join(t.exec.meta, "tasks", t.info.TaskID.Value+".records")
}

// task records a task before the executor hears of it. The run's tasks
// directory is made with the run's first task.
func (k *checkpoint) task(t *task, group bool) {
	info, err := t.info.Marshal()
	if err == nil && !t.exec.tasksDir {
		err = os.MkdirAll(filepath.Dir(taskMeta(t)), 0o700)
		t.exec.tasksDir = err == nil
	}
	if err == nil {
		err = appendRecord(t, record{Task: info, Group: group})
	}
	k.warn("task "+t.info.TaskID.Value, err)
}

// record appends to the task's records.
func (k *checkpoint) record(t *task, r record) {
	k.warn("task update "+t.info.TaskID.Value, appendRecord(t, r))
}

// update records a status update before it is forwarded.
func (k *checkpoint) update(t *task, st mesos.TaskStatus, fromExecutor bool) {
	b, err := st.Marshal()
	if err != nil {
		k.warn("task update "+t.info.TaskID.Value, err)
		return
	}
	k.record(t, record{Update: b, Executor: fromExecutor})
}

// removed forgets a task whose terminal update was acknowledged, and its
// run once the run completed and has no task left.
func (k *checkpoint) removed(t *task) {
	t.closeRecords()
	if err := os.Remove(taskMeta(t)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		k.warn("task removal "+t.info.TaskID.Value, err)
	}
	e := t.exec
	if e.state == execTerminated && len(e.tasks) == 0 {
		k.warn("executor run "+e.id, os.RemoveAll(e.meta))
	}
}

// frameworkRemoved forgets a torn-down framework.
func (k *checkpoint) frameworkRemoved(fwID string) {
	k.warn("framework removal "+fwID, os.RemoveAll(k.frameworkDir(fwID)))
}

// The checkpoint as read back at start.
type (
	ckFramework struct {
		info mesos.FrameworkInfo
		runs []ckRun
	}
	ckRun struct {
		meta        string // its directory
		execID      string
		containerID string
		info        mesos.ExecutorInfo
		forked      *forked // nil: never started
		completed   bool
		tasks       []ckTask
	}
	ckTask struct {
		meta    string // its records
		info    mesos.TaskInfo
		records []record
	}
)

// load reads every framework, run and task checkpointed. A file that
// cannot be read is skipped with a warning (what it held cannot be
// recovered).
func (k *checkpoint) load() []ckFramework {
	var out []ckFramework
	fwDirs, _ := filepath.Glob(filepath.Join(k.dir, "frameworks", "*"))
	for _, d := range fwDirs {
		var fw ckFramework
		if err := readProto(filepath.Join(d, "framework.info"), &fw.info); err != nil {
			k.log.Warn("checkpointed framework unreadable: not recovered", "dir", d, "err", err)
			continue
		}
		runs, _ := filepath.Glob(filepath.Join(d, "executors", "*", "runs", "*"))
		for _, r := range runs {
			if run, ok := k.loadRun(r); ok {
				fw.runs = append(fw.runs, run)
			}
		}
		out = append(out, fw)
	}
	return out
}

func (k *checkpoint) loadRun(dir string) (ckRun, bool) {
	run := ckRun{meta: dir, containerID: filepath.Base(dir), execID: filepath.Base(filepath.Dir(filepath.Dir(dir)))}
	if err := readProto(filepath.Join(dir, "executor.info"), &run.info); err != nil {
		k.log.Warn("checkpointed executor unreadable: not recovered", "dir", dir, "err", err)
		return run, false
	}
	if b, err := os.ReadFile(filepath.Join(dir, "forked.pid")); err == nil {
		var f forked
		if json.Unmarshal(b, &f) == nil && f.Pid > 0 {
			run.forked = &f
		}
	}
	_, err := os.Stat(filepath.Join(dir, "completed"))
	run.completed = err == nil
	tasks, _ := filepath.Glob(filepath.Join(dir, "tasks", "*.records"))
	for _, path := range tasks {
		t := ckTask{meta: path, records: readRecords(path)}
		if len(t.records) == 0 || t.info.Unmarshal(t.records[0].Task) != nil {
			k.log.Warn("checkpointed task unreadable: not recovered", "file", path)
			continue
		}
		run.tasks = append(run.tasks, t)
	}
	return run, true
}

type unmarshaler interface{ Unmarshal([]byte) error }

func readProto(path string, m unmarshaler) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return m.Unmarshal(b)
}

// readRecords reads a task's records; a line cut short (the machine
// stopped mid-write) ends them.
func readRecords(path string) []record {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			break
		}
		out = append(out, r)
	}
	return out
}

// lastAlive is when the agent last touched its alive mark (zero if never).
func (k *checkpoint) lastAlive() time.Time { return modTime(k.alivePath()) }

// touchAlive updates the alive mark (file times are the system's).
func (k *checkpoint) touchAlive() {
	p := k.alivePath()
	now := time.Now()
	if err := os.Chtimes(p, now, now); errors.Is(err, fs.ErrNotExist) {
		k.warn("alive mark", replaceFile(p, nil))
	}
}

// modTime is path's modification time, zero when it cannot be read.
func modTime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

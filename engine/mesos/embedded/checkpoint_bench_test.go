package embedded

import (
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// BenchmarkCheckpointTaskLifecycle is what the agent writes for one task of
// a checkpointing framework: its TaskInfo, its delivery to the executor,
// three status updates (STARTING, RUNNING, FINISHED) and their
// acknowledgements, and its removal. Each is a file written whole or a line
// appended, without fsync.
func BenchmarkCheckpointTaskLifecycle(b *testing.B) {
	k, err := newCheckpoint(b.TempDir(), "agent-S0", slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	e := &executor{id: "app@-@agent-S0", persisted: persisted{meta: filepath.Join(k.dir, "frameworks", "fw", "executors", "e", "runs", "c")},
		tasks: map[string]*task{}}
	data := make([]byte, 2048) // a task's sharding context and job
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "job@-@0@-@READY@-@agent-S0@-@" + strconv.Itoa(i)
		t := &task{info: mesos.TaskInfo{TaskID: mesos.TaskID{Value: id}, Data: data}, exec: e}
		k.task(t, false)
		k.record(t, record{Launched: true})
		for _, s := range []mesos.TaskState{mesos.TASK_STARTING, mesos.TASK_RUNNING, mesos.TASK_FINISHED} {
			uuid := uuidBytes()
			k.update(t, mesos.TaskStatus{TaskID: t.info.TaskID, State: s.Enum(), UUID: uuid, Data: data[:256]}, true)
			k.record(t, record{Ack: uuid})
		}
		k.removed(t)
	}
}

// Package runlog is the fault soak's run log: one JSON line per start and
// per end of a shard run, appended by whatever ran it (the simulated
// agents of mesos-local with --sim-record, the soak's job script for real
// processes) to a file outside the fault domain, and read back by the
// checker. A line is written with one write(2) on a file opened O_APPEND,
// so concurrent writers never interleave and a kill -9 loses at most the
// line being written.
package runlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// Event kinds.
const (
	Start = "start"
	End   = "end"
)

// Line is one event of a shard run. A start carries what the task's
// payload says (job, shard, source, the leader term that launched it,
// when its execution was queued: a cron fire's nominal instant, or its
// commit when late, the cron instant the execution serves when the
// scheduler recorded it, and its parameter, whose third word is a
// trigger's idempotency key); an end carries the task's final state.
type Line struct {
	Ev     string    `json:"ev"`
	At     time.Time `json:"at"`
	Task   string    `json:"task"`
	Job    string    `json:"job,omitempty"`
	Item   int       `json:"item"`
	Source string    `json:"source,omitempty"`
	Term   *int64    `json:"term,omitempty"`
	Queued time.Time `json:"queued,omitzero"`
	// Nominal is the cron instant the execution serves (zero: none
	// recorded: a trigger, a run of an older scheduler); a FAILOVER run's
	// is the instant of the run it re-runs.
	Nominal time.Time `json:"nominal,omitzero"`
	Param   string    `json:"param,omitempty"`
	State   string    `json:"state,omitempty"` // end: TASK_FINISHED, TASK_FAILED, TASK_KILLED, ...
}

// FromTaskData is a start line for a task's payload.
func FromTaskData(taskID string, at time.Time, data []byte) (Line, error) {
	td, err := jobs.UnmarshalTaskData(data)
	if err != nil {
		return Line{}, fmt.Errorf("runlog: task %s: %w", taskID, err)
	}
	sc := td.ShardingContext
	return Line{Ev: Start, At: at.UTC(), Task: taskID, Job: sc.JobName, Item: sc.ShardingItem, Source: string(td.ExecutionSource),
		Term: td.Term, Queued: td.Queued, Nominal: td.Nominal, Param: sc.JobParameter}, nil
}

// Writer appends lines to a file, one write per line.
type Writer struct {
	mu sync.Mutex
	f  *os.File
}

// Open opens (creates) the run log at path for appending.
func Open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	return &Writer{f: f}, nil
}

// Append writes one line.
func (w *Writer) Append(l Line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("runlog: %w", err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// Read parses a run log; a last line cut short by a kill is skipped, any
// other bad line is an error naming its number.
func Read(r io.Reader) ([]Line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []Line
	var bad error
	n := 0
	for sc.Scan() {
		n++
		if bad != nil {
			return nil, bad
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			bad = fmt.Errorf("runlog: line %d: %w", n, err)
			continue
		}
		if l.Ev != Start && l.Ev != End || l.Task == "" {
			return nil, fmt.Errorf("runlog: line %d: want ev start or end and a task id, got %q", n, sc.Text())
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("runlog: read: %w", err), bad)
	}
	return out, nil
}

// ReadFile reads the run log at path.
func ReadFile(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("runlog: %w", err)
	}
	defer f.Close()
	return Read(f)
}

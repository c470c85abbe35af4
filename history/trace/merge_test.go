package trace

import (
	"reflect"
	"testing"
	"time"
)

// mergeCases are executions whose start and completion differ where the
// completion's upsert picks one of them: host, address and start time
// missing from one side, a failure and its cause, a success.
func mergeCases() (starts []ExecutionStart, completes []ExecutionComplete) {
	starts = []ExecutionStart{
		{ID: "m1", JobName: "job", TaskID: "t1", Hostname: "h1", IP: "10.0.0.1", ShardingItem: 1, ExecutionSource: "NORMAL_TRIGGER", StartTime: t0},
		{ID: "m2", JobName: "job", TaskID: "t2", ShardingItem: 2, ExecutionSource: "MISFIRE", StartTime: t0.Add(time.Second)},
		{ID: "m3", JobName: "job", TaskID: "t3", Hostname: "h3", IP: "10.0.0.3", ShardingItem: 3, ExecutionSource: "FAILOVER"},
	}
	completes = []ExecutionComplete{
		{ID: "m1", JobName: "job", TaskID: "t1", Hostname: "other", IP: "x", ShardingItem: 1, ExecutionSource: "NORMAL_TRIGGER",
			StartTime: t0.Add(time.Hour), CompleteTime: t0.Add(2 * time.Second), Success: true, FailureCause: "ignored on success"},
		{ID: "m2", JobName: "job", TaskID: "t2", Hostname: "h2", IP: "10.0.0.2", ShardingItem: 2, ExecutionSource: "MISFIRE",
			StartTime: t0.Add(time.Minute), CompleteTime: t0.Add(3 * time.Second), FailureCause: "exit code 3"},
		{ID: "m3", JobName: "job", TaskID: "t3", Hostname: "h3", IP: "10.0.0.3", ShardingItem: 3, ExecutionSource: "FAILOVER",
			StartTime: t0.Add(5 * time.Second), CompleteTime: t0.Add(6 * time.Second), FailureCause: "TASK_LOST"},
	}
	return starts, completes
}

// An execution whose start and completion are written in one batch (one
// merged insert) leaves the row that the start, then the completion's
// upsert, leave when written in separate batches; also when its start was
// written before (a replay after a crash: the merged insert finds the row
// and upserts it).
func TestMergedExecutionIsTheSeparateWritesRow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		starts, completes := mergeCases()
		separate, _ := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t)})
		for _, s := range starts {
			separate.Record(s)
		}
		mustFlush(t, separate)
		for _, c := range completes {
			separate.Record(c)
		}
		mustFlush(t, separate)
		want := execs(t, separate)
		if len(want) != 3 || want["m2"].IsSuccess != 0 || want["m2"].Hostname != "h2" {
			t.Fatalf("separate writes: %+v", want)
		}

		// Each start next to its completion: one batch, merged.
		together := func(w *Writer) {
			for i := range starts {
				w.Record(starts[i])
				w.Record(completes[i])
			}
			mustFlush(t, w)
		}
		merged, _ := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t)})
		together(merged)
		if got := execs(t, merged); !reflect.DeepEqual(got, want) {
			t.Errorf("merged\n got %+v\nwant %+v", got, want)
		}

		replayed, _ := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t)})
		replayed.Record(starts[1])
		mustFlush(t, replayed)
		together(replayed)
		if got := execs(t, replayed); !reflect.DeepEqual(got, want) {
			t.Errorf("merged after a replayed start\n got %+v\nwant %+v", got, want)
		}
	})
}

// mergeExecutions keeps every other event in order, merges only a start
// and a completion of the same ID, and leaves the batch it was given as
// it was.
func TestMergeExecutionsPairsByID(t *testing.T) {
	starts, completes := mergeCases()
	trace := StatusTrace{ID: "s", TaskID: "t1", State: "TASK_RUNNING"}
	in := []Event{starts[0], trace, completes[1], completes[0], starts[2]}
	orig := append([]Event(nil), in...)
	out := mergeExecutions(in)
	if !reflect.DeepEqual(in, orig) {
		t.Fatalf("the input was changed: %+v", in)
	}
	if len(out) != 4 || out[0] != Event(trace) || out[1] != Event(completes[1]) || out[3] != Event(starts[2]) {
		t.Fatalf("out %+v", out)
	}
	c := out[2].(ExecutionComplete)
	if !c.whole || c.Hostname != "h1" || c.IP != "10.0.0.1" || !c.StartTime.Equal(t0) || !c.CompleteTime.Equal(t0.Add(2*time.Second)) || !c.Success {
		t.Fatalf("merged %+v", c)
	}
}

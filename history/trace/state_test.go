package trace

import "testing"

// Every state an engine reports is kept whole: TASK_GONE_BY_OPERATOR (21 characters, a task
// of an agent the operator marked gone, as real Mesos reports it) was clipped to the
// original's VARCHAR(20) as TASK_GONE_BY_OPERATO, a state that does not exist.
func TestLongestStateKeptWhole(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, _ := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t)})
		w.Record(StatusTrace{ID: "s1", JobName: "job", TaskID: "job@-@0@-@READY@-@agent-1@-@u1", SlaveID: "agent-1",
			Source: SourceScheduler, ExecutionType: ExecutionReady, ShardingItem: "0", State: "TASK_GONE_BY_OPERATOR", CreationTime: t0})
		mustFlush(t, w)
		if got := traces(t, w); len(got) != 1 || got[0].State != "TASK_GONE_BY_OPERATOR" {
			t.Fatalf("traces %+v, want the one state TASK_GONE_BY_OPERATOR", got)
		}
	})
}

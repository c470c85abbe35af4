package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/workflow"
)

type wfRunRow struct {
	State     string     `db:"state"`
	Attempt   int        `db:"attempt"`
	Ended     *time.Time `db:"end_time"`
	Reason    string     `db:"reason"`
	Succeeded int        `db:"succeeded_count"`
	Failed    int        `db:"failed_count"`
	Skipped   int        `db:"skipped_count"`
	Version   int64      `db:"version"`
}

type wfNodeRow struct {
	Node    string     `db:"node_id"`
	Attempt int        `db:"attempt"`
	State   string     `db:"state"`
	TaskIDs string     `db:"task_ids"`
	Started *time.Time `db:"start_time"`
	Skip    string     `db:"skip_reason"`
	Message string     `db:"message"`
	Outputs string     `db:"outputs"`
}

// A run's row follows the run (a late older state changes nothing); each
// node that ended gets one row per attempt; retention ages both tables.
func TestWorkflowHistoryRows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, clk := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t), MaxAge: 48 * time.Hour})
		o := NewWorkflowObserver(w)
		c := workflow.Default()
		c.Name = "etl"
		c.Nodes = []workflow.Node{{ID: "a", Job: "ja", Trigger: workflow.AllSucceeded}, {ID: "b", Job: "jb", DependsOn: []string{"a"}, Trigger: workflow.AllSucceeded}}
		queued := workflow.NewRun(c, "r1", workflow.SourceAPI, nil, "", t0)
		o.RunChanged(workflow.Run{}, queued)
		running, _ := workflow.Step(queued, true, workflow.Input{Now: t0})
		running.Version = 1
		o.RunChanged(queued, running)
		ex := workflow.Execution{Done: true, Success: true, Shards: []workflow.Shard{{Item: 0, TaskID: "ja@-@0@-@READY@-@a@-@1", State: "TASK_FINISHED",
			StartedAt: t0.Add(time.Second), EndedAt: t0.Add(2 * time.Second), Outputs: map[string]string{"rows": "42"}}}}
		mid, _ := workflow.Step(running, false, workflow.Input{Now: t0.Add(3 * time.Second), Executions: map[string]workflow.Execution{"a": ex}})
		mid.Version = 2
		o.RunChanged(running, mid)
		end, _ := workflow.Step(mid, false, workflow.Input{Now: t0.Add(4 * time.Second), Executions: map[string]workflow.Execution{"b": {Done: true,
			Shards: []workflow.Shard{{Item: 0, TaskID: "jb@-@0@-@READY@-@a@-@2", State: "TASK_FAILED", Message: "exit code 1"}}}}})
		end.Version = 3
		o.RunChanged(mid, end)
		o.RunChanged(running, mid) // a late, older write (a deposed leader's)
		mustFlush(t, w)
		var runs []wfRunRow
		if err := db(t, w).Select(&runs, "SELECT state, attempt, end_time, reason, succeeded_count, failed_count, skipped_count, version FROM WORKFLOW_RUN_LOG"); err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].State != "FAILED" || runs[0].Version != 3 || runs[0].Succeeded != 1 || runs[0].Failed != 1 ||
			runs[0].Ended == nil || !runs[0].Ended.UTC().Equal(t0.Add(4*time.Second)) || runs[0].Reason != "failed: 'b'" {
			t.Fatalf("run rows %+v", runs)
		}
		var nodes []wfNodeRow
		if err := db(t, w).Select(&nodes, "SELECT node_id, attempt, state, task_ids, start_time, skip_reason, message, outputs FROM WORKFLOW_NODE_LOG ORDER BY node_id"); err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 2 || nodes[0].State != "SUCCEEDED" || nodes[0].Outputs != `{"rows":"42"}` || nodes[0].TaskIDs != "ja@-@0@-@READY@-@a@-@1" ||
			nodes[0].Started == nil || !nodes[0].Started.UTC().Equal(t0.Add(time.Second)) || nodes[1].State != "FAILED" ||
			!strings.Contains(nodes[1].Message, "exit code 1") {
			t.Fatalf("node rows %+v", nodes)
		}
		// A retry: the run row follows, the retried node gets a second row.
		retried, _ := workflow.Retry(end)
		retried.Version = 4
		o.RunChanged(end, retried)
		again, _ := workflow.Step(retried, true, workflow.Input{Now: t0.Add(time.Minute)})
		again.Version = 5
		o.RunChanged(retried, again)
		done, _ := workflow.Step(again, false, workflow.Input{Now: t0.Add(2 * time.Minute), Executions: map[string]workflow.Execution{"b": ex}})
		done.Version = 6
		o.RunChanged(again, done)
		mustFlush(t, w)
		if n := count(t, w, "WORKFLOW_NODE_LOG"); n != 3 {
			t.Fatalf("%d node rows after the retry, want 3", n)
		}
		var st string
		if err := db(t, w).Get(&st, "SELECT state FROM WORKFLOW_RUN_LOG"); err != nil || st != "SUCCEEDED" {
			t.Fatalf("run after retry: %q %v", st, err)
		}
		clk.Advance(72 * time.Hour)
		if _, err := w.Retain(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if count(t, w, "WORKFLOW_RUN_LOG")+count(t, w, "WORKFLOW_NODE_LOG") != 0 {
			t.Fatal("retention left workflow rows")
		}
	})
}

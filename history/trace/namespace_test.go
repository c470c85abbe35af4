package trace

import (
	"testing"
	"time"
)

// A job of a namespace other than the default one is known to the
// scheduler by its key ("pay~nightly"): its rows hold the namespace and
// the name apart, the task id whole; a default job's rows are as before.
func TestRowsOfANamespace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		w, clk := open(t, Options{Dialect: b.dialect, DSN: b.dsn(t)})
		at := clk.Now()
		w.Record(StatusTrace{ID: "s1", JobName: "pay~nightly", TaskID: "pay~nightly@-@0@-@READY@-@a@-@u", State: "TASK_RUNNING", CreationTime: at})
		w.Record(ExecutionComplete{ID: "e1", JobName: "pay~nightly", TaskID: "pay~nightly@-@0@-@READY@-@a@-@u", StartTime: at, CompleteTime: at, Success: true})
		w.Record(ExecutionComplete{ID: "e2", JobName: "nightly", TaskID: "nightly@-@0@-@READY@-@a@-@u", StartTime: at, CompleteTime: at, Success: true})
		w.Record(Audit{ID: "a1", User: "alice", Role: "user", Method: "POST", Route: "/api/job/trigger", Status: 204, CreationTime: at, Namespace: "pay"})
		w.Record(Audit{ID: "a2", User: "root", Role: "admin", Method: "POST", Route: "/api/job/trigger", Status: 204, CreationTime: at})
		w.Record(WorkflowRun{ID: "w1", Workflow: "pay~flow", RunID: "r1", State: "RUNNING", Created: at, Version: 1})
		w.Record(WorkflowNode{ID: "n1", Workflow: "pay~flow", RunID: "r1", Node: "a", Job: "pay~nightly", RunKey: "pay~wf-1", State: "SUCCEEDED", Ended: at})
		mustFlush(t, w)
		type row struct {
			NS   string `db:"namespace"`
			Name string `db:"name"`
		}
		for q, want := range map[string][]row{
			"SELECT namespace, job_name AS name FROM JOB_STATUS_TRACE_LOG":           {{"pay", "nightly"}},
			"SELECT namespace, job_name AS name FROM JOB_EXECUTION_LOG ORDER BY id":  {{"pay", "nightly"}, {"default", "nightly"}},
			"SELECT namespace, user_name AS name FROM AUDIT_LOG ORDER BY id":         {{"pay", "alice"}, {"default", "root"}},
			"SELECT namespace, workflow_name AS name FROM WORKFLOW_RUN_LOG":          {{"pay", "flow"}},
			"SELECT namespace, job_name AS name FROM WORKFLOW_NODE_LOG":              {{"pay", "nightly"}},
			"SELECT namespace, run_key AS name FROM WORKFLOW_NODE_LOG":               {{"pay", "wf-1"}},
			"SELECT namespace, task_id AS name FROM JOB_EXECUTION_LOG WHERE id='e1'": {{"pay", "pay~nightly@-@0@-@READY@-@a@-@u"}},
		} {
			var got []row
			if err := db(t, w).Select(&got, q); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %+v, want %+v", q, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%s: %+v, want %+v", q, got, want)
				}
			}
		}
		_ = time.Second
	})
}

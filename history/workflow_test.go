package history

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
)

func TestSearchWorkflowHistory(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		base := time.Date(2024, 2, 1, 8, 0, 0, 0, time.UTC)
		for i, st := range []string{"SUCCEEDED", "FAILED", "SUCCEEDED"} {
			wf := "etl"
			if i == 2 {
				wf = "other"
			}
			e.exec(t, "INSERT INTO WORKFLOW_RUN_LOG (id, workflow_name, run_id, state, source, attempt, created_time, start_time, end_time, reason, "+
				"node_count, succeeded_count, failed_count, skipped_count, version) VALUES (?, ?, ?, ?, 'API', 1, ?, ?, ?, '', 3, 2, 1, 0, 4)",
				"run-"+string(rune('a'+i)), wf, "r"+string(rune('0'+i)), st, e.d.bindTime(base.Add(time.Duration(i)*time.Minute)),
				e.d.bindTime(base.Add(time.Duration(i)*time.Minute)), e.d.bindTime(base.Add(time.Duration(i)*time.Minute+time.Second)))
		}
		for i, n := range []string{"extract", "clean", "alert"} {
			e.exec(t, "INSERT INTO WORKFLOW_NODE_LOG (id, workflow_name, run_id, node_id, job_name, depends_on, trigger_rule, attempt, state, run_key, "+
				"task_ids, queued_time, start_time, end_time, skip_reason, message, outputs) VALUES (?, 'etl', 'r1', ?, ?, ?, 'allSucceeded', 1, ?, 'wf-k', "+
				"'t1,t2', NULL, NULL, ?, '', '', '{\"rows\":\"42\"}')", "node-"+n, n, n+"_job", map[int]string{1: "extract", 2: "extract,clean"}[i],
				map[int]string{0: "SUCCEEDED", 1: "FAILED", 2: "SUCCEEDED"}[i], e.d.bindTime(base.Add(time.Duration(i)*time.Second)))
		}
		runs, err := e.store.WorkflowRuns(ctx, view.Query{Filters: map[string]string{"workflowName": "etl"}})
		if err != nil || runs.Total != 2 || runs.Rows[0].RunID != "r1" || runs.Rows[0].State != "FAILED" || runs.Rows[0].NodeCount != 3 ||
			runs.Rows[0].EndTime == nil || !runs.Rows[0].EndTime.Equal(base.Add(time.Minute+time.Second)) {
			t.Fatalf("runs of etl, newest first: %+v %v", runs, err)
		}
		if p, err := e.store.WorkflowRuns(ctx, view.Query{Filters: map[string]string{"state": "SUCCEEDED"}, Sort: "runId", Order: "asc"}); err != nil ||
			p.Total != 2 || p.Rows[0].RunID != "r0" || p.Rows[1].Workflow != "other" {
			t.Fatalf("succeeded runs: %+v %v", p, err)
		}
		nodes, err := e.store.WorkflowNodes(ctx, view.Query{Filters: map[string]string{"runId": "r1", "workflowName": "etl"}, Sort: "nodeId"})
		if err != nil || nodes.Total != 3 || nodes.Rows[0].NodeID != "alert" || nodes.Rows[0].DependsOn != "extract,clean" ||
			nodes.Rows[1].State != "FAILED" || nodes.Rows[2].Outputs != `{"rows":"42"}` || nodes.Rows[2].TaskIDs != "t1,t2" || nodes.Rows[2].QueuedTime != nil {
			t.Fatalf("nodes of r1: %+v %v", nodes, err)
		}
		if _, err := e.store.WorkflowNodes(ctx, view.Query{Filters: map[string]string{"outputs": "x"}}); err == nil {
			t.Fatal("a filter on outputs was accepted")
		}
	})
}

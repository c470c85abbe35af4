package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// clusterOps answers the cluster page as the Kubernetes engine does: a
// node with pay's and search's pods.
type clusterOps struct {
	payOps
	pods []map[string]any
}

func (c *clusterOps) Cluster(context.Context) (any, error) {
	return map[string]any{"leader": "127.0.0.1:8899", "agents": []any{},
		"kubernetes": map[string]any{"namespace": "elasticjob", "nodes": []any{map[string]any{
			"name": "node-1", "usable": true, "allocatableCpus": 4.0, "freeCpus": 2.5, "pods": c.pods}}}}, nil
}

// leakTeams is twoTeamsAPI where search's nightly waits, ready and as a
// failover shard, for capacity pay's running nightly holds, and the
// cluster page lists both teams' pods.
func leakTeams(t *testing.T) (*tenancy, string) {
	t.Helper()
	ctx := context.Background()
	searchTask := jobs.NewTaskID("search~nightly", 1, jobs.KindReady, "agent-1").String()
	ops := &clusterOps{}
	// dave: a role in both, who sees pay's names (the users file of the tenancy tests, and him)
	users := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(users, []byte(tenancyUsers+`  - name: dave
    password: '$2y$05$775ogPsIQk6GuRP9SjwQq.60fB2IJJUJ78HpzhbvfsKcfpqvjKNCm' # hunter2
    namespaces: {search: view, pay: view, default: view}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(users, nil, "root", "guest")
	if err != nil {
		t.Fatal(err)
	}
	tn := twoTeamsAPI(t, func(o *api.Options) {
		o.Live.Ops, o.Live.Engine = ops, ops
		o.Auth = api.NewAuth(api.Credentials{AdminUser: "root", AdminPassword: "s3cret", GuestUser: "guest", GuestPassword: "peek", Users: uf}, o.Clock, o.Registry.Tenancy())
	})
	ops.pods = []map[string]any{
		{"name": "pay-nightly-0-x1", "taskId": tn.payTask, "phase": "Running", "state": "TASK_RUNNING", "cpus": 1.25, "memMB": 384.0},
		{"name": "search-nightly-1-x2", "taskId": searchTask, "phase": "Pending", "state": "TASK_STAGING", "waiting": "FailedScheduling: 0/1 nodes"},
	}
	if _, err := tn.reg.In("search").Work().TriggerRun(ctx, "nightly", queue.PendingRun{IdempotencyKey: "s1"}, t0); err != nil {
		t.Fatal(err)
	}
	h := queue.Holder{Job: "pay~nightly", Shards: 1, TaskID: tn.payTask, Holds: queue.Res{CPUs: 1, MemMB: 128}, Since: t0.Add(-5 * time.Second)}
	words := "job pay~nightly (1 shard, 1 CPU and 128 MB) until it ends (no run of it known to tell when)"
	reserved := queue.Wait{Reason: queue.WaitReservation, Since: t0, Needs: &queue.Res{CPUs: 2, MemMB: 64}, Holders: []queue.Holder{h},
		Message: "behind the reservation of the older execution of job pay~nightly, which holds 1 CPU and 64 MB of what is free now " +
			"and takes what frees up on the agents it can use first; not enough CPU: a shard needs 2 CPUs and 64 MB; held by " + words}
	lent := queue.Wait{Reason: queue.WaitReserved, Since: t0, Needs: &queue.Res{CPUs: 1, MemMB: 64}, Holders: []queue.Holder{h},
		NamespaceRule: &queue.NamespaceRule{Namespace: "search", Rule: queue.RuleLent, Guaranteed: true},
		Message: "the oldest work that does not fit now; held by " + words + "; namespace search is within its guarantee: the capacity it needs " +
			"is lent to other namespaces' work until 2024-03-01T12:00:08Z (job nightly of namespace pay is expected to end then); " +
			"preempting the borrowed capacity of job nightly of namespace pay (preemptible: stopped gracefully and queued again as a misfire)"}
	if err := tn.reg.Change().Wait(queue.WaitKey(false, "search~nightly", 0), reserved).
		FailOver("search~nightly", 1, queue.Failover{TaskID: searchTask, Since: t0}).
		Wait(queue.WaitKey(true, "search~nightly", 1), lent).
		Launch("search~nightly", 2, task.Entry{TaskID: jobs.NewTaskID("search~nightly", 2, jobs.KindReady, "agent-1").String(), AgentID: "agent-1",
			State: task.Running, LaunchedAt: t0, KilledBy: round.PreemptionBy + " for " + round.OtherWork + " within its namespace's guarantee"}).
		Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return tn, searchTask
}

// payNames are what no answer to bob (search alone) may hold of pay's
// work: its job's key, its task id, its namespace as the one work is of.
func payNames(tn *tenancy) []string {
	return []string{"pay~", tn.payTask, "namespace pay", "of namespace pay", "pay-nightly", secret}
}

// Each route that can name another namespace's work, as bob (a role in
// search alone), the guest (default alone) and the admin read it: bob and
// the guest see pay's holders and pods as "another namespace's work" with
// their resources; the admin sees their names.
func TestAnotherNamespacesWorkIsNotNamed(t *testing.T) {
	tn, _ := leakTeams(t)
	type holderView struct {
		JobName        string
		TaskID         string
		Shards         int
		Holds          queue.Res
		OtherNamespace bool
	}
	type waitView struct {
		Message, Summary string
		Holders          []holderView
	}
	waits := func(t *testing.T, body []byte, status bool) []waitView {
		if status {
			var st struct{ Waiting waitView }
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatal(err)
			}
			return []waitView{st.Waiting}
		}
		var rows []struct{ Waiting waitView }
		if err := json.Unmarshal(body, &rows); err != nil {
			t.Fatal(err)
		}
		var out []waitView
		for _, r := range rows {
			out = append(out, r.Waiting)
		}
		return out
	}
	for _, tc := range []struct {
		route  string
		status bool // the job's status (one wait), else a queue's rows
	}{
		{"/api/job/tasks/ready?namespace=search", false},
		{"/api/job/tasks/failover?namespace=search", false},
		{"/api/jobs/nightly/status?namespace=search", true},
	} {
		t.Run(tc.route, func(t *testing.T) {
			for _, caller := range []struct {
				user, pass string
				sees       bool
			}{{"bob", "hunter2", false}, {"root", "s3cret", true}, {"dave", "hunter2", true}} {
				w := tn.call("GET", tc.route, "", caller.user, caller.pass)
				if w.Code != http.StatusOK {
					t.Fatalf("%s: %d %s", caller.user, w.Code, w.Body)
				}
				ws := waits(t, w.Body.Bytes(), tc.status)
				if len(ws) != 1 || len(ws[0].Holders) != 1 {
					t.Fatalf("%s: %s", caller.user, w.Body)
				}
				h := ws[0].Holders[0]
				if h.Shards != 1 || h.Holds != (queue.Res{CPUs: 1, MemMB: 128}) {
					t.Errorf("%s: the holder's resources: %+v", caller.user, h)
				}
				if caller.sees {
					if h.JobName != "pay~nightly" || h.TaskID != tn.payTask || h.OtherNamespace || !strings.Contains(ws[0].Message, "job pay~nightly") ||
						!strings.Contains(ws[0].Summary, "job pay~nightly holds 1 CPU and 128 MB") {
						t.Errorf("%s sees no names: %s", caller.user, w.Body)
					}
					continue
				}
				if h.JobName != round.OtherWork || h.TaskID != "" || !h.OtherNamespace ||
					!strings.Contains(ws[0].Message, "another namespace's work (1 shard, 1 CPU and 128 MB) until it ends") ||
					!strings.HasPrefix(ws[0].Summary, "waits for ") || !strings.Contains(ws[0].Summary, "; another namespace's work holds 1 CPU and 128 MB until it ends") {
					t.Errorf("%s: %s", caller.user, w.Body)
				}
				for _, name := range payNames(tn) {
					if strings.Contains(w.Body.String(), name) {
						t.Errorf("%s reads %q: %s", caller.user, name, w.Body)
					}
				}
			}
		})
	}
	t.Run("/api/operate/cluster", func(t *testing.T) {
		w := tn.call("GET", "/api/operate/cluster", "", "guest", "peek")
		body := w.Body.String()
		if w.Code != http.StatusOK || strings.Contains(body, "pay") || strings.Contains(body, "search") ||
			strings.Count(body, `"taskId":"another namespace's work"`) != 2 || strings.Count(body, `"name":"another namespace's work"`) != 2 || strings.Count(body, `"otherNamespace":true`) != 2 ||
			!strings.Contains(body, `"phase":"Running"`) || !strings.Contains(body, `"freeCpus":2.5`) ||
			!strings.Contains(body, `"cpus":1.25`) || !strings.Contains(body, `"memMB":384`) || strings.Contains(body, "FailedScheduling") {
			t.Errorf("the guest's cluster page: %d %s", w.Code, body)
		}
		if w := tn.call("GET", "/api/operate/cluster", "", "root", "s3cret"); !strings.Contains(w.Body.String(), tn.payTask) ||
			!strings.Contains(w.Body.String(), "pay-nightly-0-x1") || strings.Contains(w.Body.String(), "otherNamespace") {
			t.Errorf("the admin's cluster page: %d %s", w.Code, w.Body)
		}
		if w := tn.call("GET", "/api/operate/cluster", "", "dave", "hunter2"); !strings.Contains(w.Body.String(), tn.payTask) ||
			strings.Count(w.Body.String(), `"otherNamespace":true`) != 0 {
			t.Errorf("dave's cluster page (a role in pay and search): %d %s", w.Code, w.Body)
		}
		if w := tn.call("GET", "/api/operate/cluster", "", "bob", "hunter2"); w.Code != http.StatusForbidden {
			t.Errorf("bob's cluster page: %d %s", w.Code, w.Body)
		}
	})
}

// TestNoRouteNamesAnotherNamespacesWork walks every route of the router
// as bob, in his namespace search, with search's names, while search's
// work waits for what pay's holds: no answer names pay's work.
func TestNoRouteNamesAnotherNamespacesWork(t *testing.T) {
	tn, searchTask := leakTeams(t)
	read := 0
	for _, rt := range tn.h.(*gin.Engine).Routes() {
		if !isReadMethod(rt.Method) && rt.Path != "/api/job/trigger" { // reads, and a trigger (an error may name what holds it back)
			continue
		}
		target := strings.NewReplacer(":taskId", searchTask, ":key", "s1").Replace(rt.Path)
		target = tn.fill(target, "search") + "?" + strings.ReplaceAll(tn.query(rt.Path, "search"), tn.payTask, searchTask)
		w := tn.call(rt.Method, target, bodyFor(rt.Path), "bob", "hunter2")
		if w.Code == http.StatusOK {
			read++
		}
		for _, name := range payNames(tn) {
			if strings.Contains(w.Body.String(), name) {
				t.Errorf("%s %s: %d: names %q: %s", rt.Method, target, w.Code, name, w.Body)
			}
		}
	}
	if read < 30 {
		t.Errorf("only %d routes answered bob 200: the walk is broken", read)
	}
}

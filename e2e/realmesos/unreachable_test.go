//go:build e2e

package realmesos

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// TestStagingTaskOfAPartitionedAgent shows on Mesos 1.11 why the scheduler does not run again,
// without the job's failover flag, a task that went UNREACHABLE while still STAGING
// (task.LostBeforeStartWords): the launch is sent while the agent is paused (partitioned: the
// master still holds it registered), the master marks the agent unreachable and the task
// TASK_UNREACHABLE, and when the agent is back the launch it had not read yet starts the task's
// executor all the same, unless the agent's own ping timeout fires first as it resumes (it then
// drops the launch: both outcomes are accepted, the first is why). The subtest "lost" is the agent killed while paused and started again
// on its work directory and port (it recovers its id): the launch never reached it, and the
// master then says TASK_GONE (REASON_RECONCILIATION, "Task is unknown to the agent"), not
// TASK_DROPPED: no longer running, which the scheduler counts lost as any GONE (with framework
// checkpointing off an agent back under its id knows none of the tasks it ran either).
func TestStagingTaskOfAPartitionedAgent(t *testing.T) {
	for _, lost := range []bool{false, true} {
		name := map[bool]string{false: "partitioned", true: "lost"}[lost]
		t.Run(name, func(t *testing.T) {
			m := startMesos(t, mesosOpts{masterFlags: []string{"--agent_ping_timeout=1secs", "--max_agent_ping_timeouts=2"}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := mesos.New(mesos.Config{URL: m.masterURL(), Logger: slog.New(slog.DiscardHandler), FailoverTimeout: time.Minute})
			rec := &recorder{}
			done := make(chan struct{})
			go func() { defer close(done); _ = client.Run(ctx, rec) }()
			defer func() { cancel(); <-done }()

			marker := filepath.Join(t.TempDir(), "started")
			id := jobs.FireTaskID("part", 0, jobs.KindReady, "ready|1", time.Now()).String()
			var o engine.Offer
			eventually(t, waitLong, func() bool { var ok bool; o, ok = rec.takeOffer(); return ok }, "an offer")
			m.agent.pause()
			paused := true
			defer func() {
				if paused {
					m.agent.resume()
				}
			}()
			launch := engine.TaskLaunch{TaskID: id, Name: "part-0", CPUs: 0.1, MemMB: 32, AgentID: o.AgentID,
				Task:     jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "part", TaskID: id, ShardingTotalCount: 1}},
				Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("part-app", o.AgentID), Name: "part", CPUs: 0.1, MemMB: 32, Command: "touch " + marker + "; sleep 60", Shell: true}}
			if err := client.Accept(ctx, []string{o.ID}, []engine.TaskLaunch{launch}, 0); err != nil {
				t.Fatalf("ACCEPT: %v", err)
			}
			var st engine.Status
			eventually(t, waitLong, func() bool { var ok bool; st, ok = rec.update(id, task.Unreachable); return ok }, "the task to go UNREACHABLE")
			if _, ok := rec.update(id, task.Starting); ok {
				t.Fatal("the task reported STARTING before its agent was lost")
			}
			if _, ok := rec.update(id, task.Running); ok {
				t.Fatal("the task reported RUNNING before its agent was lost")
			}
			t.Logf("UNREACHABLE from STAGING: reason %s, source %s, unreachable since %s", st.Reason, st.Source, st.UnreachableSince.Format(time.RFC3339Nano))
			if lost {
				m.agent.kill9()
				m.agent.resume()
				paused = false
				m.agent = m.restartAgent() // the same agent id, recovered
			} else {
				m.agent.resume()
				paused = false
			}
			eventually(t, waitLong, func() bool { return m.activeAgents() >= 1 }, "the agent to register again")
			if lost {
				// what the master says of a launch the agent never read
				var end engine.Status
				var asked time.Time
				eventually(t, waitLong, func() bool {
					rec.mu.Lock()
					defer rec.mu.Unlock()
					for _, u := range rec.updates {
						if u.TaskID == id && u.State != task.Unreachable {
							end = u
							return true
						}
					}
					if time.Since(asked) > 2*time.Second { // ask the master now and then
						asked = time.Now()
						go func() { _ = client.Reconcile(ctx, []engine.TaskRef{{TaskID: id, AgentID: o.AgentID}}) }()
					}
					return false
				}, "an update of the task after its agent came back")
				t.Logf("after the agent came back: %s, reason %s, source %s, %q", end.State, end.Reason, end.Source, end.Message)
				if end.State != task.Gone || end.Reason != task.ReasonReconciliation || end.Source != task.SourceMaster {
					t.Errorf("the master's word on a launch its agent never read: %s %s %s, want TASK_GONE REASON_RECONCILIATION from the master", end.State, end.Reason, end.Source)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Fatal("the task's executor started though its agent never read the launch")
				}
				return
			}
			// The agent back reads the launch and starts the executor, unless its
			// own ping timeout fires first on resuming: then it is between masters
			// and drops the launch ("not the expected master"). Which comes first is
			// the agent's race; the first is why the scheduler does not run again.
			agentLog := filepath.Join(m.dir, "agent.log")
			dropped := func() bool {
				b, _ := os.ReadFile(agentLog)
				return strings.Contains(string(b), "Ignoring run task message from master@") && strings.Contains(string(b), "not the expected master")
			}
			started := func() bool { _, err := os.Stat(marker); return err == nil }
			eventually(t, waitLong, func() bool { return started() || dropped() },
				"the launch the partitioned agent had not read to start the task's executor when it came back, or the agent to drop it")
			if started() {
				t.Logf("the executor of a task UNREACHABLE from STAGING started once its agent was back")
			} else {
				t.Logf("the agent back timed out its master first and dropped the launch it had not read (the other outcome of the agent's race)")
			}
		})
	}
}

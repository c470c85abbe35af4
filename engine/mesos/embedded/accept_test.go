package embedded

import (
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// TestValidateLaunch: the checks an ACCEPT's LAUNCH and LAUNCH_GROUP
// operations pass before anything is charged, and what they need.
func TestValidateLaunch(t *testing.T) {
	a := newAgent(0, "S0", "h", testPool(4, 1024), false)
	execInfo := func(id string) mesos.ExecutorInfo {
		return mesos.ExecutorInfo{ExecutorID: mesos.ExecutorID{Value: id}, Command: &mesos.CommandInfo{Value: strPtr("run")},
			Resources: testPool(0.1, 32)}
	}
	taskInfo := func(id string) mesos.TaskInfo {
		return mesos.TaskInfo{TaskID: mesos.TaskID{Value: id}, AgentID: mesos.AgentID{Value: "S0"}, Resources: testPool(1, 128)}
	}
	groupTask := func(id string) mesos.TaskInfo {
		ti := taskInfo(id)
		ti.Command = &mesos.CommandInfo{Value: strPtr("x")}
		return ti
	}
	type setup struct {
		fw   *framework
		l    launch
		seen map[string]bool
	}
	base := func(mut func(*setup)) func() setup {
		return func() setup {
			s := setup{fw: testFramework("F", true), l: launch{exec: execInfo("e1"), tasks: []mesos.TaskInfo{taskInfo("t1")}},
				seen: map[string]bool{}}
			if mut != nil {
				mut(&s)
			}
			return s
		}
	}
	cases := []struct {
		name    string
		setup   func() setup
		wantErr string          // substring; "" for valid
		need    mesos.Resources // when valid
	}{
		{"a task and a new executor: both are needed", base(nil), "", testPool(1.1, 160)},
		{"a group of two", base(func(s *setup) {
			s.l = launch{exec: execInfo("e1"), tasks: []mesos.TaskInfo{groupTask("t1"), groupTask("t2")}, group: true}
		}), "", testPool(2.1, 288)},
		{"the executor runs already: only the task", base(func(s *setup) {
			info := execInfo("e1")
			info.FrameworkID = &mesos.FrameworkID{Value: "F"}
			s.fw.executors[execKey{"S0", "e1"}] = &executor{id: "e1", info: info, state: execRunning}
		}), "", testPool(1, 128)},
		{"no executor (a command task)", base(func(s *setup) { s.l.exec = mesos.ExecutorInfo{} }), "command tasks are not supported", nil},
		{"invalid executor id", base(func(s *setup) { s.l.exec.ExecutorID.Value = "a/b" }), "Executor ID 'a/b' is invalid", nil},
		{"another framework's executor", base(func(s *setup) { s.l.exec.FrameworkID = &mesos.FrameworkID{Value: "G"} }), "invalid FrameworkID", nil},
		{"an executor without a command", base(func(s *setup) { s.l.exec.Command = nil }), "must have a CommandInfo", nil},
		{"invalid task id", base(func(s *setup) { s.l.tasks[0].TaskID.Value = ".." }), "Task ID '..' is invalid", nil},
		{"a task id the framework has", base(func(s *setup) { s.fw.tasks["t1"] = &task{} }), "duplicate ID: t1", nil},
		{"a task id earlier in the same call", base(func(s *setup) { s.seen["t1"] = true }), "duplicate ID: t1", nil},
		{"another agent", base(func(s *setup) { s.l.tasks[0].AgentID.Value = "S9" }), "invalid agent: S9", nil},
		{"a group task without a command", base(func(s *setup) { s.l.group = true }), "must have a CommandInfo and no ExecutorInfo", nil},
		{"a plain task with a command", base(func(s *setup) { s.l.tasks[0].Command = &mesos.CommandInfo{} }), "at least one (but not both)", nil},
		{"negative resources", base(func(s *setup) { s.l.tasks[0].Resources = testPool(-1, 128) }), "Task uses invalid resources", nil},
		{"a terminating executor", base(func(s *setup) {
			s.fw.executors[execKey{"S0", "e1"}] = &executor{id: "e1", info: execInfo("e1"), state: execTerminating}
		}), "Executor e1 is terminating", nil},
		{"an executor info that differs from the running one", base(func(s *setup) {
			other := execInfo("e1")
			other.Command = &mesos.CommandInfo{Value: strPtr("other")}
			s.fw.executors[execKey{"S0", "e1"}] = &executor{id: "e1", info: other, state: execRunning}
		}), "not compatible", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.setup()
			need, err := validateLaunch(s.fw, a, s.l, s.seen)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !contains(need, tc.need) || !contains(tc.need, need) {
				t.Fatalf("needs %v, want %v", need, tc.need)
			}
			for _, ti := range s.l.tasks {
				if !s.seen[ti.TaskID.Value] {
					t.Errorf("task %s not recorded as seen", ti.TaskID.Value)
				}
			}
		})
	}
}

package embedded

import (
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

func TestFateOf(t *testing.T) {
	cases := []struct {
		name      string
		completed bool
		alive     bool
		want      runFate
	}{
		{"process still runs: reattach", false, true, fateReattach},
		{"ended before the restart", true, false, fateEnded},
		{"completed wins over a reused pid", true, true, fateEnded},
		{"died with the agent: gone", false, false, fateGone},
	}
	for _, tc := range cases {
		if got := fateOf(ckRun{completed: tc.completed}, tc.alive); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRecoveryOrder(t *testing.T) {
	runs := []ckRun{{containerID: "live1"}, {containerID: "gone1"}, {containerID: "live2"}, {containerID: "done", completed: true}}
	got := recoveryOrder(runs, map[string]bool{"live1": true, "live2": true})
	want := []string{"gone1", "done", "live1", "live2"}
	for i, r := range got {
		if r.containerID != want[i] {
			t.Fatalf("got %v at %d, want order %v", r.containerID, i, want)
		}
	}
	if runs[0].containerID != "live1" {
		t.Fatal("recoveryOrder reordered its input")
	}
}

func TestLatestSignAndGoneAt(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	alive := now.Add(-time.Minute)
	cases := []struct {
		name   string
		alive  time.Time
		writes []time.Time
		want   time.Time
	}{
		{"nothing known: now", time.Time{}, []time.Time{{}, {}}, now},
		{"the agent's alive mark", alive, nil, alive},
		{"a later log write", alive, []time.Time{now.Add(-30 * time.Second), {}}, now.Add(-30 * time.Second)},
		{"an earlier log write does not count", alive, []time.Time{now.Add(-time.Hour)}, alive},
		{"never after now (clock skew)", alive, []time.Time{now.Add(time.Hour)}, now},
		{"only a log write", time.Time{}, []time.Time{alive}, alive},
	}
	for _, tc := range cases {
		if got := latestSign(tc.alive, tc.writes, now); !got.Equal(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := goneAt(alive, false, now); !got.Equal(alive) {
		t.Errorf("goneAt: got %v", got)
	}
	if got := goneAt(alive, true, now); !got.Equal(now) {
		t.Errorf("goneAt with orphans killed at start: got %v, want now", got)
	}
}

func TestReplayTask(t *testing.T) {
	id := mesos.TaskID{Value: "t1"}
	update := func(state mesos.TaskState, uuid string) []byte {
		st := mesos.TaskStatus{TaskID: id, State: state.Enum(), UUID: []byte(uuid)}
		b, err := st.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	info := record{Task: []byte{1}}
	cases := []struct {
		name     string
		records  []record
		state    mesos.TaskState
		pending  []string // uuids, in order
		launched bool
		group    bool
		forget   bool
		released bool
	}{
		{"never sent", []record{info}, mesos.TASK_STAGING, nil, false, false, false, false},
		{"from a launch group", []record{{Task: []byte{1}, Group: true}}, mesos.TASK_STAGING, nil, false, true, false, false},
		{"sent to the executor", []record{info, {Launched: true}}, mesos.TASK_STAGING, nil, true, false, false, false},
		{"running, unacknowledged", []record{info, {Launched: true}, {Update: update(mesos.TASK_RUNNING, "u1"), Executor: true}},
			mesos.TASK_RUNNING, []string{"u1"}, true, false, false, false},
		{"an executor update means it has it", []record{info, {Update: update(mesos.TASK_RUNNING, "u1"), Executor: true}},
			mesos.TASK_RUNNING, []string{"u1"}, true, false, false, false},
		{"running, acknowledged", []record{info, {Launched: true}, {Update: update(mesos.TASK_RUNNING, "u1"), Executor: true}, {Ack: []byte("u1")}},
			mesos.TASK_RUNNING, nil, true, false, false, false},
		{"finished, not acknowledged: kept to resend", []record{info, {Launched: true},
			{Update: update(mesos.TASK_RUNNING, "u1"), Executor: true}, {Ack: []byte("u1")},
			{Update: update(mesos.TASK_FINISHED, "u2"), Executor: true}},
			mesos.TASK_FINISHED, []string{"u2"}, true, false, false, true},
		{"two pending, the first acknowledged", []record{info, {Launched: true},
			{Update: update(mesos.TASK_RUNNING, "u1"), Executor: true}, {Update: update(mesos.TASK_FINISHED, "u2"), Executor: true},
			{Ack: []byte("u1")}},
			mesos.TASK_FINISHED, []string{"u2"}, true, false, false, true},
		{"finished and acknowledged: forgotten", []record{info, {Launched: true},
			{Update: update(mesos.TASK_FINISHED, "u2"), Executor: true}, {Ack: []byte("u2")}},
			mesos.TASK_FINISHED, nil, true, false, true, true},
		{"an agent's update does not mean the executor has it", []record{info, {Update: update(mesos.TASK_FAILED, "u3")}},
			mesos.TASK_FAILED, []string{"u3"}, false, false, false, true},
		{"an undecodable update is skipped", []record{info, {Launched: true}, {Update: []byte{0xff, 0xff}}},
			mesos.TASK_STAGING, nil, true, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := replayTask(id, tc.records)
			if r.state != tc.state || r.status.GetState() != tc.state {
				t.Errorf("state %v (status %v), want %v", r.state, r.status.GetState(), tc.state)
			}
			var pending []string
			for _, p := range r.pending {
				pending = append(pending, string(p.status.UUID))
			}
			if len(pending) != len(tc.pending) {
				t.Fatalf("pending %v, want %v", pending, tc.pending)
			}
			for i := range pending {
				if pending[i] != tc.pending[i] {
					t.Fatalf("pending %v, want %v", pending, tc.pending)
				}
			}
			if r.launched != tc.launched || r.group != tc.group || r.forget != tc.forget || r.released != tc.released {
				t.Errorf("launched=%v group=%v forget=%v released=%v, want %v %v %v %v",
					r.launched, r.group, r.forget, r.released, tc.launched, tc.group, tc.forget, tc.released)
			}
			if got, want := awaitsLaunch(r.launched, r.state), !tc.launched && !isTerminal(tc.state); got != want {
				t.Errorf("awaitsLaunch %v, want %v", got, want)
			}
		})
	}
}

func TestKeepOnClose(t *testing.T) {
	cases := []struct {
		name                  string
		checkpointed, started bool
		state                 execState
		recovered             bool
		mode                  string
		want                  bool
	}{
		{"checkpointing, subscribed: left running", true, true, execRunning, false, RecoverReconnect, true},
		{"recovered, awaiting re-registration: left running", true, true, execLaunching, true, RecoverReconnect, true},
		{"never subscribed: shut down", true, true, execLaunching, false, RecoverReconnect, false},
		{"framework does not checkpoint", false, true, execRunning, false, RecoverReconnect, false},
		{"process never started", true, false, execRunning, false, RecoverReconnect, false},
		{"asked to stop", true, true, execTerminating, false, RecoverReconnect, false},
		{"recover=cleanup", true, true, execRunning, false, RecoverCleanup, false},
	}
	for _, tc := range cases {
		if got := keepOnClose(tc.checkpointed, tc.started, tc.state, tc.recovered, tc.mode); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLossState(t *testing.T) {
	cases := []struct {
		aware bool
		l     loss
		want  mesos.TaskState
	}{
		{false, lossDropped, mesos.TASK_LOST},
		{false, lossGone, mesos.TASK_LOST},
		{false, lossUnknown, mesos.TASK_LOST},
		{false, lossUnknownOnAgent, mesos.TASK_LOST},
		{true, lossDropped, mesos.TASK_DROPPED},
		{true, lossGone, mesos.TASK_GONE},
		{true, lossUnknown, mesos.TASK_UNKNOWN},
		{true, lossUnknownOnAgent, mesos.TASK_GONE},
	}
	for _, tc := range cases {
		if got := lossState(tc.aware, tc.l); got != tc.want {
			t.Errorf("partition aware %v, loss %d: got %v, want %v", tc.aware, tc.l, got, tc.want)
		}
	}
}

func TestKeepRecoveredFramework(t *testing.T) {
	if keepRecoveredFramework(0, 0) {
		t.Error("nothing left: kept")
	}
	if !keepRecoveredFramework(1, 0) || !keepRecoveredFramework(0, 1) {
		t.Error("an executor or a task left: dropped")
	}
}

func TestLostInRestart(t *testing.T) {
	mk := func(id string, launched bool, state mesos.TaskState) *task {
		return &task{info: mesos.TaskInfo{TaskID: mesos.TaskID{Value: id}}, launched: launched, state: state}
	}
	live := []*task{
		mk("sent-unknown", true, mesos.TASK_STAGING),
		mk("sent-known", true, mesos.TASK_STAGING),
		mk("queued", false, mesos.TASK_STAGING),
		mk("running", true, mesos.TASK_RUNNING),
	}
	got := lostInRestart(live, map[string]bool{"sent-known": true})
	if len(got) != 1 || got[0].info.TaskID.Value != "sent-unknown" {
		t.Fatalf("got %v, want only the task sent but unknown to the executor", got)
	}
	if got := lostInRestart(live, map[string]bool{"sent-unknown": true, "sent-known": true}); len(got) != 0 {
		t.Fatalf("everything known: got %v", got)
	}
}

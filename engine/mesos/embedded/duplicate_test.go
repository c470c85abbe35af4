package embedded

import (
	"slices"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// A duplicate task id as Mesos 1.11 answers it: in a LAUNCH (how the
// scheduler launches a gang's shards: one TaskInfo each) only the
// duplicate is refused (TASK_ERROR, REASON_TASK_INVALID) and the other
// tasks launch; in a LAUNCH_GROUP the whole group is refused, each task
// with REASON_TASK_GROUP_INVALID and a message naming the duplicate, and
// none of it launches. The task that runs under the id goes on.
func TestDuplicateInALaunchAndInALaunchGroup(t *testing.T) {
	c := newCluster(t, nil)
	s := subscribe(t, c, frameworkInfo())
	ex := execInfo(t, "e1", "1", 0.1, 32)
	s.launch(s.offer(), taskInfo(c, "t1", "hang", ex, 0.1, 32))
	s.ack(s.update("t1"))

	s.launch(s.offer(), taskInfo(c, "t1", "hang", ex, 0.1, 32), taskInfo(c, "t2", "hang", ex, 0.1, 32))
	if st := s.update("t1"); st.GetState() != mesos.TASK_ERROR || st.GetReason() != mesos.REASON_TASK_INVALID ||
		st.GetMessage() != "Task has duplicate ID: t1" {
		t.Fatalf("the duplicate in a LAUNCH: %s %s %q", st.GetState(), st.GetReason(), st.GetMessage())
	}
	if st := s.update("t2"); st.GetState() == mesos.TASK_ERROR {
		t.Fatalf("the other task of the LAUNCH: %s %q, want it launched", st.GetState(), st.GetMessage())
	}

	group := func(id string) mesos.TaskInfo {
		ti := taskInfo(c, id, "hang", nil, 0.1, 32)
		ti.Command = &mesos.CommandInfo{Value: strPtr("true")}
		return ti
	}
	refuse := 0.0
	s.mustCall(&scheduler.Call{Type: scheduler.Call_ACCEPT, Accept: &scheduler.Call_Accept{
		OfferIDs: []mesos.OfferID{s.offer().ID},
		Operations: []mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH_GROUP, LaunchGroup: &mesos.Offer_Operation_LaunchGroup{
			Executor: *ex, TaskGroup: mesos.TaskGroupInfo{Tasks: []mesos.TaskInfo{group("t3"), group("t1")}}}}},
		Filters: &mesos.Filters{RefuseSeconds: &refuse},
	}})
	for _, id := range []string{"t3", "t1"} {
		st := s.update(id)
		if st.GetState() != mesos.TASK_ERROR || st.GetReason() != mesos.REASON_TASK_GROUP_INVALID ||
			st.GetMessage() != "Task 't1' is invalid: Task has duplicate ID: t1" {
			t.Fatalf("%s of the LAUNCH_GROUP: %s %s %q", id, st.GetState(), st.GetReason(), st.GetMessage())
		}
	}
	snap := c.Snapshot()
	var ids []string
	for _, tk := range snap.Tasks {
		ids = append(ids, tk.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"t1", "t2"}) {
		t.Fatalf("tasks at the master: %v, want t1 and t2 (nothing of the group)", ids)
	}
}

package registry

import (
	"maps"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store/memory"
)

// TestJobsChangedAtOfIsJobsChangedAt: read job by job, the later of each
// job's registration and last change is what the listing of every job's
// records gives: a job registered at a known instant, one updated later,
// one disabled (its gate off: the registration counts), one enabled again,
// one unknown (absent).
func TestJobsChangedAtOfIsJobsChangedAt(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	r := New(mem)
	ctx := t.Context()
	gateRigApp(t, r)
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var names []string
	for i, name := range []string{"registered", "updated", "disabled", "enabled"} {
		j := gateJob()
		j.JobName = name
		if err := r.Config().AddJobAt(ctx, j, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	u := gateJob()
	u.JobName, u.Cron = "updated", "*/5 * * * * ?"
	if err := r.Config().UpdateJobAt(ctx, u, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"disabled", "enabled"} {
		if err := r.Config().SetDisabled(ctx, "job", name, true, t0.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Config().SetDisabled(ctx, "job", "enabled", false, t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	all, err := r.Config().JobsChangedAt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	some, err := r.Config().JobsChangedAtOf(ctx, append(names, "unknown"))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(all, some) || len(all) != len(names) {
		t.Fatalf("job by job %v, listed %v", some, all)
	}
	if !all["updated"].Equal(t0.Add(time.Minute)) || !all["enabled"].Equal(t0.Add(3*time.Minute)) || !all["disabled"].Equal(t0.Add(2*time.Second)) {
		t.Fatalf("changed at %v", all)
	}
}

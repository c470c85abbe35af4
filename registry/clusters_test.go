package registry

import (
	"context"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store/memory"
)

// TestClusterDrains: a drain mark is kept once (its first Since), listed by name, and
// cleared; clearing one not set says so.
func TestClusterDrains(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	defer kv.Close()
	r := New(kv)
	t1 := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	if err := r.Clusters().Drain(ctx, Drain{Cluster: "mesos-dc1", By: "admin", Since: t1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Clusters().Drain(ctx, Drain{Cluster: "mesos-dc1", By: "other", Since: t1.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Clusters().Drained(ctx)
	if err != nil || len(got) != 1 || !got["mesos-dc1"].Since.Equal(t1) || got["mesos-dc1"].By != "admin" {
		t.Fatalf("drained: %v %v", got, err)
	}
	if ok, err := r.Clusters().Undrain(ctx, "mesos-dc1"); !ok || err != nil {
		t.Fatalf("undrain: %v %v", ok, err)
	}
	if ok, err := r.Clusters().Undrain(ctx, "mesos-dc1"); ok || err != nil {
		t.Fatalf("undrain again: %v %v", ok, err)
	}
	if got, err := r.Clusters().Drained(ctx); err != nil || len(got) != 0 {
		t.Fatalf("drained after undrain: %v %v", got, err)
	}
}

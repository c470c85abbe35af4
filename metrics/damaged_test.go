package metrics

import (
	"maps"
	"testing"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

func TestDamagedEntriesBySubtree(t *testing.T) {
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	reg := registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)})
	ctx := t.Context()
	for _, p := range []string{"/config/app/a", "/config/job/b", "/namespaces/pay/config/job/c"} {
		if err := kv.Commit(ctx, store.Put(p, []byte(`{"appName":"x","ap`))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	m := New()
	m.ObserveDamaged(reg)
	if got, want := damagedGauge(t, m), map[string]float64{"config/app": 1, "config/job": 2}; !maps.Equal(got, want) {
		t.Errorf("gauge = %v, want %v", got, want)
	}
	// a removed entry leaves the count at the next scrape
	if err := kv.Commit(ctx, store.Delete("/config/app/a", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if got, want := damagedGauge(t, m), map[string]float64{"config/job": 2}; !maps.Equal(got, want) {
		t.Errorf("after a removal, gauge = %v, want %v", got, want)
	}
}

func damagedGauge(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "elasticjob_registry_damaged_entries" {
			continue
		}
		for _, x := range mf.GetMetric() {
			out[x.GetLabel()[0].GetValue()] = x.GetGauge().GetValue()
		}
	}
	return out
}

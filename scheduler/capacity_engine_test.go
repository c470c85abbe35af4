package scheduler

import (
	"testing"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/round"
)

// The engine's caps join the records' capacities in a copy: the records' map, kept between
// rounds, is never changed, and a namespace the engine does not cap keeps its record alone.
func TestWithEngineCaps(t *testing.T) {
	lim := offers.Resources{CPU: offers.CPUs(4), MemMB: 4096}
	recs := map[string]round.Capacity{"pay": {Limit: &lim, Weight: 2}, "ops": {Weight: 3}}
	got := withEngineCaps(recs, map[string]engine.NamespaceCap{
		"pay":  {Capped: true, CPUs: 1.5, MemMB: 512, Name: "compute of Kubernetes namespace pay"},
		"team": {Closed: "its Kubernetes namespace team does not exist"},
	})
	if recs["pay"].Quota != nil || len(recs) != 2 {
		t.Fatalf("the records' map changed: %+v", recs)
	}
	p := got["pay"]
	if p.Quota == nil || *p.Quota != (offers.Resources{CPU: offers.CPUs(1.5), MemMB: 512}) || p.QuotaName == "" || p.Weight != 2 || p.Limit != &lim {
		t.Errorf("pay: %+v", p)
	}
	if got["team"].Closed == "" || got["ops"].Weight != 3 || got["ops"].Quota != nil {
		t.Errorf("team %+v, ops %+v", got["team"], got["ops"])
	}
	if m := withEngineCaps(recs, nil); len(m) != 2 {
		t.Errorf("no caps: %+v", m)
	}
}

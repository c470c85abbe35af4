package offers

import (
	"strings"
	"testing"
)

// TestPlaceInKeepsToItsClusters: a placement limited to clusters uses only their
// offers, and says what they lack when they lack it, even when another cluster's offers
// would fit.
func TestPlaceInKeepsToItsClusters(t *testing.T) {
	offs := []Offer{
		{ID: "a1", AgentID: "a:1", Cluster: "a", Free: Resources{CPU: CPUs(1), MemMB: 1024}},
		{ID: "b1", AgentID: "b:1", Cluster: "b", Free: Resources{CPU: CPUs(8), MemMB: 8192}},
	}
	req := func(job string, shards int, cpu float64) []Request {
		var out []Request
		for i := range shards {
			out = append(out, Request{Job: job, Shard: i, Kind: Ready, App: "app", Task: Resources{CPU: CPUs(cpu), MemMB: 128}})
		}
		return out
	}
	m := NewMatcher(offs, nil)
	if ok, _, _ := m.PlaceIn(req("small", 1, 0.5), "a"); !ok {
		t.Error("a 0.5-cpu shard on cluster a: not placed")
	}
	if ok, reason, detail := m.PlaceIn(req("big", 2, 1), "a"); ok || reason != ReasonGangIncomplete || !strings.Contains(detail, "largest free cpus=0.500") {
		t.Errorf("two 1-cpu shards on cluster a (0.5 cpu left): %v %s %s", ok, reason, detail)
	}
	if ok, reason, _ := m.PlaceIn(req("gone", 1, 0.1), "c"); ok || reason != ReasonNoOffers {
		t.Errorf("on cluster c, which offers nothing: %v %s", ok, reason)
	}
	if ok, _, _ := m.PlaceIn(req("big", 2, 1), "a", "b"); !ok {
		t.Error("two 1-cpu shards on clusters a and b: not placed")
	}
	for id, ls := range m.Plan().Launches {
		for _, l := range ls {
			if l.Request.Job != "small" && id != "b1" || l.Request.Job == "small" && id != "a1" {
				t.Errorf("%s placed on %s", l.Request.Job, id)
			}
		}
	}
	// Place with no clusters named places anywhere, as before.
	if ok, _, _ := m.Place(req("any", 1, 6)); !ok {
		t.Error("a 6-cpu shard anywhere: not placed")
	}
}

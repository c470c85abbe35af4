package embedded

import (
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// benchCluster is a simulated cluster of n agents (not serving) with one
// subscribed framework whose stream is drained by the benchmark.
func benchCluster(b *testing.B, n int) (*Cluster, *framework) {
	b.Helper()
	c, err := New(Config{WorkDir: b.TempDir(), Sim: &SimConfig{Agents: n}})
	if err != nil {
		b.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fw := &framework{id: "bench-fw", executors: map[execKey]*executor{}, tasks: map[string]*task{},
		filters: map[string][]*filter{}, offers: map[string]*offer{}, sub: newEventStream(streamFormat{}, "s")}
	c.frameworks[fw.id] = fw
	return c, fw
}

// One allocation cycle over every agent (what SUBSCRIBE and REVIVE cost):
// an offer per agent, all in one OFFERS event (JSON-encoded).
func BenchmarkAllocateAll1000Agents(b *testing.B) {
	c, fw := benchCluster(b, 1000)
	c.mu.Lock()
	defer c.mu.Unlock()
	b.ReportAllocs()
	for b.Loop() {
		c.removeOffers(fw, false)
		c.touchAll()
		c.allocate()
		if len(fw.offers) != 1000 {
			b.Fatalf("%d offers", len(fw.offers))
		}
		fw.sub.take()
	}
}

// The same cycle when every agent's pool is covered by a decline filter:
// no offer is made.
func BenchmarkAllocateAllFiltered1000Agents(b *testing.B) {
	c, fw := benchCluster(b, 1000)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touchAll()
	c.allocate()
	var ids []mesos.OfferID
	for _, o := range fw.offers {
		ids = append(ids, mesos.OfferID{Value: o.id})
	}
	refuse := time.Hour.Seconds()
	c.decline(fw, ids, &mesos.Filters{RefuseSeconds: &refuse})
	defer c.clearFilters(fw)
	fw.sub.take()
	b.ReportAllocs()
	for b.Loop() {
		c.touchAll()
		c.allocate()
		if len(fw.offers) != 0 {
			b.Fatalf("%d offers despite the filters", len(fw.offers))
		}
	}
}

// The common case: one agent's resources changed (a task ended, an offer
// came back) among 1,000 and it is offered again.
func BenchmarkAllocateOneOf1000Agents(b *testing.B) {
	c, fw := benchCluster(b, 1000)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.touchAll()
	c.allocate()
	fw.sub.take()
	a := c.agents[500]
	b.ReportAllocs()
	for b.Loop() {
		c.removeOffer(fw.offers[a.id], false)
		c.allocate()
		if fw.offers[a.id] == nil {
			b.Fatal("not offered again")
		}
		fw.sub.take()
	}
}

package offers

import (
	"fmt"
	"math/rand"
	"testing"
)

// benchInput builds 1,000 jobs × 10 shards (20% failover, 20 apps with their
// own executor sizes) over 1,000 offers on 800 agents (200 agents hold two
// offers), with each app's executor already running on 40 agents. coresPerOffer
// sets how tight the cluster is.
func benchInput(coresPerOffer int) Input {
	rng := rand.New(rand.NewSource(42))
	const agents, offers, apps, jobs, shardsPerJob = 800, 1000, 20, 1000, 10
	var in Input
	for i := range offers {
		in.Offers = append(in.Offers, Offer{
			ID:      fmt.Sprintf("offer-%04d", i),
			AgentID: fmt.Sprintf("agent-%03d", i%agents),
			Free: Resources{
				CPU:   Milli(coresPerOffer*500 + rng.Intn(coresPerOffer*1000+1)),
				MemMB: int64(8192 + rng.Intn(24577)),
			},
		})
	}
	execs := make([]Resources, apps)
	for a := range execs {
		execs[a] = Resources{CPU: Milli(100 + rng.Intn(400)), MemMB: int64(64 + rng.Intn(192))}
	}
	in.Running = map[ExecutorKey]bool{}
	for a := range apps {
		for range 40 {
			in.Running[ExecutorKey{fmt.Sprintf("app-%02d", a), fmt.Sprintf("agent-%03d", rng.Intn(agents))}] = true
		}
	}
	for j := range jobs {
		a := rng.Intn(apps)
		kind := Ready
		if rng.Intn(5) == 0 {
			kind = Failover
		}
		task := Resources{CPU: Milli(100 + 100*rng.Intn(10)), MemMB: int64(64 * (1 + rng.Intn(16)))}
		seq := rng.Int63n(5000)
		for s := range shardsPerJob {
			in.Requests = append(in.Requests, Request{
				Job: fmt.Sprintf("job-%04d", j), Shard: s, Kind: kind, App: fmt.Sprintf("app-%02d", a),
				Task: task, Executor: execs[a], Seq: seq + int64(s),
			})
		}
	}
	return in
}

func benchMatch(b *testing.B, in Input) {
	p := Match(in)
	placed := 0
	for _, ls := range p.Launches {
		placed += len(ls)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Match(in)
	}
	b.ReportMetric(float64(placed), "placed")
	b.ReportMetric(float64(len(p.Unplaced)), "unplaced")
}

// BenchmarkMatch10kShards1kOffers: about 5,500 cores of demand on ~10,000
// cores of offers; nearly everything places.
func BenchmarkMatch10kShards1kOffers(b *testing.B) { benchMatch(b, benchInput(10)) }

// BenchmarkMatch10kShards1kOffersOversubscribed: the same demand on ~4,000
// cores, so the offers fill up and many gangs are tried and rolled back.
func BenchmarkMatch10kShards1kOffersOversubscribed(b *testing.B) { benchMatch(b, benchInput(4)) }

func TestBenchInputIsValid(t *testing.T) {
	for _, cores := range []int{10, 4} {
		in := benchInput(cores)
		checkInvariants(t, in, Match(in))
	}
}

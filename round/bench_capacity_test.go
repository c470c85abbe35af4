package round

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/offers"
)

// withCapacity gives each of the 100 namespaces a guarantee (a hundredth
// of the cluster), a limit (a twentieth), a weight of 1 to 4, and a cron
// fire of each of its first 50 jobs in the next hour.
func withCapacity(v *View) {
	v.Namespaces = map[string]Capacity{}
	for t := range 100 {
		v.Namespaces[fmt.Sprintf("team-%02d", t)] = Capacity{
			Guarantee: offers.Resources{CPU: 128_000, MemMB: 524_288},
			Limit:     &offers.Resources{CPU: 640_000, MemMB: 2_621_440},
			Weight:    float64(1 + t%4)}
	}
	for i := range 5000 {
		j := v.Ready[i*20%len(v.Ready)].Job
		v.Fires = append(v.Fires, Fire{Job: j, At: v.Now.Add(time.Duration(1+i) * 700 * time.Millisecond),
			Need: offers.Resources{CPU: 300, MemMB: 256}})
	}
}

package queue_test

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/queue"
)

// Three cron fires of a job without misfire collapse into the one pending
// execution; a trigger with a parameter is always added, and it launches
// first (overrides are taken before plain executions).
func ExampleAdd() {
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	var rd *queue.Ready
	for i := range 3 {
		next, changed := queue.Add(rd, queue.Trigger{At: at.Add(time.Duration(i) * time.Minute), By: "cron"}, 0)
		fmt.Printf("fire %d: changed %v, count %d\n", i, changed, next.Count)
		rd = &next
	}
	next, changed := queue.Add(rd, queue.Trigger{At: at.Add(3 * time.Minute), By: "api:ann",
		Run: &queue.PendingRun{JobParameter: "full"}}, 0)
	fmt.Printf("trigger: changed %v, count %d, misfired %d, next runs with %q queued by %s\n",
		changed, next.Count, next.Misfired, next.First().JobParameter, next.FirstBy())
	// Output:
	// fire 0: changed true, count 1
	// fire 1: changed false, count 1
	// fire 2: changed false, count 1
	// trigger: changed true, count 2, misfired 1, next runs with "full" queued by api:ann
}

// With misfire set, each fire adds an execution up to the pending cap;
// Take launches the oldest and queues the rest again.
func ExampleTake() {
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	var rd queue.Ready
	for i := range 5 {
		rd, _ = queue.Add(&rd, queue.Trigger{Misfire: true, At: at.Add(time.Duration(i) * time.Minute), By: "cron"}, 3)
	}
	fmt.Println("pending:", rd.Count, "full:", queue.Full(rd, 3))
	for {
		rest, ok := queue.Take(rd, at.Add(10*time.Minute))
		fmt.Println("launch one; misfire:", rd.Misfire(), "left:", rest.Count)
		if !ok {
			break
		}
		rd = rest
	}
	// Output:
	// pending: 3 full: true
	// launch one; misfire: false left: 2
	// launch one; misfire: true left: 1
	// launch one; misfire: true left: 0
}

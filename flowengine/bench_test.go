package flowengine

import (
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/workflow"
)

// BenchmarkFanInStep is the engine's work for one fan node's end in a
// 1 → 50 → 1 run (memory store: no fsync): read the run and the records
// of its 50 running nodes, decide, commit.
func BenchmarkFanInStep(b *testing.B) {
	var names []string
	for i := 1; i <= 50; i++ {
		names = append(names, fmt.Sprintf("f%02d", i))
	}
	r := newRig(&testing.T{}, append(names, "root", "sink")...)
	c := workflow.Default()
	c.Name = "fan"
	c.Nodes = []workflow.Node{{ID: "root", Job: "root"}}
	for _, n := range names {
		c.Nodes = append(c.Nodes, workflow.Node{ID: n, Job: n, DependsOn: []string{"root"}})
	}
	c.Nodes = append(c.Nodes, workflow.Node{ID: "sink", Job: "sink", DependsOn: names})
	r.register(c)
	r.start()
	id := r.trigger("fan", nil)
	r.round()
	r.execute("root", "TASK_FINISHED", nil)
	r.round()
	ref := runRef{"fan", id}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.eng.process(r.ctx, ref); err != nil { // nothing ended: reads and decides only
			b.Fatal(err)
		}
	}
}

package deadline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
)

// A pass over more jobs than the old bound (20,000) reads each job's
// durations once a TTL, not again on the next pass.
func TestTypicalCacheHoldsALargeRegistry(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	reads := 0
	c := &TypicalCache{Clock: clk, Source: func(context.Context, string) ([]time.Duration, error) {
		reads++
		return []time.Duration{time.Second}, nil
	}}
	const jobs = 30_000
	for pass := range 2 {
		for i := range jobs {
			if got := c.Get(t.Context(), fmt.Sprintf("job-%d", i)); got.Runs != 1 {
				t.Fatalf("pass %d, job %d: %+v", pass, i, got)
			}
		}
		clk.Advance(5 * time.Second)
	}
	if reads != jobs {
		t.Fatalf("%d reads of the history for two passes over %d jobs, want %d", reads, jobs, jobs)
	}
	clk.Advance(typicalTTL)
	c.Get(t.Context(), "job-0")
	if reads != jobs+1 {
		t.Fatalf("an entry older than its TTL was not read again (%d reads)", reads)
	}
}

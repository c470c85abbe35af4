package scheduler

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/task"
)

// TestDurationsReadHistoryOffTheLoop: once the reader runs, a round does
// not wait for history: it asks for the running jobs it has not seen
// (each once a term), goes on with this term's runs, and the runs read
// arrive on the loop (post) behind this term's own.
func TestDurationsReadHistoryOffTheLoop(t *testing.T) {
	release := make(chan struct{})
	reads := make(chan string, 10)
	ds := newDurations(func(ctx context.Context, job string) ([]time.Duration, error) {
		reads <- job
		select { // the read holds until the test lets it go: the round must not wait for it
		case <-release:
		case <-ctx.Done():
		}
		return []time.Duration{7 * time.Second, 9 * time.Second}, nil
	}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	onLoop := make(chan func(context.Context), 10)
	ds.start(ctx, func(_ context.Context, f func(context.Context)) { onLoop <- f })

	running := map[string]map[int]task.Entry{"a": {0: {}}}
	if got := ds.typical(ctx, running); len(got) != 0 {
		t.Fatalf("typical = %v before any run is known", got)
	}
	if job := <-reads; job != "a" {
		t.Fatalf("read %q, want a", job)
	}
	ds.add("a", 5*time.Second) // a shard of this term ends while history is read
	ds.typical(ctx, running)   // asks nothing again
	close(release)
	(<-onLoop)(ctx)
	if got := ds.byJob["a"]; len(got) != 3 || got[0] != 5*time.Second || got[1] != 7*time.Second {
		t.Fatalf("runs = %v, want this term's 5s then history's 7s, 9s", got)
	}
	if _, ok := ds.typical(ctx, running)["a"]; !ok {
		t.Fatal("no estimate once the runs arrived")
	}
	select {
	case job := <-reads:
		t.Fatalf("history read again for %s", job)
	default:
	}

	ds.forget("a") // deleted while a read was under way: the read is dropped
	ds.merge("a", []time.Duration{time.Second})
	if len(ds.byJob["a"]) != 0 {
		t.Fatalf("a forgotten job kept %v", ds.byJob["a"])
	}
}

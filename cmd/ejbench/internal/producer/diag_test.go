package producer

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/sqlite"
)

// Diagnostic micro-benchmarks behind the harness's figures (run with
// `go test -run x -bench . -cpu 1 ./cmd/ejbench/internal/producer/`): what one producer batch
// costs and how late a Go timer wakes on this machine.

// BenchmarkTriggerMany28 is one producer batch at 100k hourly jobs: 28
// jobs fire in the same second, each a Get of its ready entry plus one
// commit (fsync) creating the 28 entries.
func BenchmarkTriggerMany28(b *testing.B) {
	absent := func(string) bool { return true }
	for _, m := range []struct {
		name string
		sync sqlite.Sync
		hint func(string) bool
	}{{"full", sqlite.SyncFull, nil}, {"normal", sqlite.SyncNormal, nil}, {"full/blind", sqlite.SyncFull, absent}} {
		b.Run(m.name, func(b *testing.B) {
			ctx := context.Background()
			kv, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "registry.db"), sqlite.Options{Sync: m.sync})
			if err != nil {
				b.Fatal(err)
			}
			defer kv.Close()
			reg := registry.New(kv)
			n := 0
			for b.Loop() {
				batch := make(map[string]bool, 28)
				for range 28 {
					batch[fmt.Sprintf("job-%07d", n)] = false
					n++
				}
				if err := reg.Work().TriggerMany(ctx, batch, time.Now(), time.Time{}, m.hint); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTimerLateness prints how late a timer armed for the next whole
// second fires (the producer arms one timer for its next fire instant).
func TestTimerLateness(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	var late []time.Duration
	for range 20 {
		now := time.Now()
		at := now.Truncate(100 * time.Millisecond).Add(100 * time.Millisecond)
		tm := time.NewTimer(at.Sub(now))
		<-tm.C
		late = append(late, time.Since(at))
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	t.Logf("timer lateness over %d wakes: p50 %v, max %v", len(late), late[len(late)/2], late[len(late)-1])
}

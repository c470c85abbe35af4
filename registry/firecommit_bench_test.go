package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/store/sqlite"
)

// benchOnDisk runs BenchmarkFireCommit over SQLite (EJ_BENCH_FIRE_ON_DISK
// set), not the memory store.
var benchOnDisk = os.Getenv("EJ_BENCH_FIRE_ON_DISK") != ""

// BenchmarkFireCommit is one producer commit of 1,000 jobs' fires (each
// creating its job's ready entry) through the scheduler's copy of the
// registry (store/cache over the memory store): behind the jobs' gates only, and with what a fire commit carries now (each job's stored
// configuration checked, the commit's id written on the version read).
//
//	go test -run x -bench FireCommit -cpu 1 ./registry/
func BenchmarkFireCommit(b *testing.B) {
	ctx := context.Background()
	var back store.KV = memory.New() // the commit's own work, no disk
	if benchOnDisk {
		db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "registry.db"), sqlite.Options{Sync: sqlite.SyncNormal})
		if err != nil {
			b.Fatal(err)
		}
		back = db
	}
	defer back.Close()
	kv, err := cache.Open(ctx, back, cache.Options{Roots: []string{"/config", "/state"}})
	if err != nil {
		b.Fatal(err)
	}
	defer kv.Close()
	r := New(kv)
	a := gateJob()
	app := app.Default()
	app.AppName, app.AppURL, app.BootstrapScript = "app", "http://h/a.tgz", "bin/start.sh"
	if err := r.Config().AddApp(ctx, app); err != nil {
		b.Fatal(err)
	}
	const jobs = 1000
	sums := map[string]uint64{}
	for i := range jobs {
		a.JobName = fmt.Sprintf("j%05d", i)
		if err := r.Config().AddJobAt(ctx, a, t0); err != nil {
			b.Fatal(err)
		}
		n, err := r.Config().StoredJob(ctx, a.JobName)
		if err != nil {
			b.Fatal(err)
		}
		sums[a.JobName] = n.Sum()
	}
	instant := t0
	for _, mode := range []string{"gate", "gate+config+id"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer() // every commit creates the entries: the last one's are gone
				if err := r.commit(ctx, store.Delete(ReadyPath, store.AnyVersion)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				instant = instant.Add(time.Second)
				fires := make(map[string]CronFire, jobs)
				for job, sum := range sums {
					f := CronFire{At: instant, Instant: instant}
					if mode != "gate" {
						f.Config = sum
					}
					fires[job] = f
				}
				id := ""
				if mode != "gate" {
					id = instant.String()
				}
				if _, err := r.Work().TriggerFiresOnce(ctx, fires, instant, id, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

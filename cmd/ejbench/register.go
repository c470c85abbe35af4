package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// registration is the outcome of registerJobs.
type registration struct {
	ok       int
	errors   int64
	took     time.Duration
	lat      []float64 // seconds per request
	firstErr error
}

// registerJobs posts body(i) to /api/job/register for i in [0, n) from
// workers keep-alive clients until done, ctx ends or 100 requests failed.
func registerJobs(ctx context.Context, api *client, n, workers int, body func(i int) string) registration {
	var next, failures atomic.Int64
	var res registration
	var once sync.Once
	lat := make([][]float64, workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil && failures.Load() < 100 {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s := time.Now()
				err := api.postJSON("/api/job/register", body(i))
				lat[w] = append(lat[w], time.Since(s).Seconds())
				if err != nil {
					failures.Add(1)
					once.Do(func() { res.firstErr = err })
				}
			}
		})
	}
	wg.Wait()
	res.took = time.Since(t0)
	for _, l := range lat {
		res.lat = append(res.lat, l...)
	}
	res.errors = failures.Load()
	res.ok = len(res.lat) - int(res.errors)
	return res
}

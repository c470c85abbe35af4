package bench

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Registration is the outcome of registerJobs.
type Registration struct {
	OK       int
	Errors   int64
	Took     time.Duration
	Lat      []float64 // seconds per request
	Retried  int64     // requests sent again after a 503 (no leader for a moment)
	FirstErr error
}

// retries503 bounds the retries of one registration answered 503: 10 s.
const retries503 = 50

// RegisterJobs posts body(i) to /api/job/register for i in [0, n) from
// workers keep-alive clients until done, ctx ends or 100 requests failed
// (one answered 503 is sent again for up to 10 s first).
func RegisterJobs(ctx context.Context, api *Client, n, workers int, body func(i int) string) Registration {
	var next, failures, retried atomic.Int64
	var res Registration
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
				err := api.PostJSON("/api/job/register", body(i))
				// A 503 says no scheduler leads at the moment (an election,
				// a term lost under load): the job is not registered, and
				// the request is for the next leader, as a client retries it.
				for try := 0; err != nil && strings.Contains(err.Error(), ": 503 ") && try < retries503 && ctx.Err() == nil; try++ {
					retried.Add(1)
					time.Sleep(200 * time.Millisecond)
					err = api.PostJSON("/api/job/register", body(i))
				}
				lat[w] = append(lat[w], time.Since(s).Seconds())
				if err != nil {
					failures.Add(1)
					once.Do(func() { res.FirstErr = err })
				}
			}
		})
	}
	wg.Wait()
	res.Took = time.Since(t0)
	for _, l := range lat {
		res.Lat = append(res.Lat, l...)
	}
	res.Errors = failures.Load()
	res.Retried = retried.Load()
	res.OK = len(res.Lat) - int(res.Errors)
	return res
}

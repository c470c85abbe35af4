package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	// Answers counts the answers outside 2xx by status, each one sent
	// again included, and First is each status's first such answer.
	Answers map[int]int
	First   map[int]string
}

// retry503For bounds how long one registration answered 503 is sent
// again, each time after the answer's Retry-After.
const retry503For = 30 * time.Second

// RegisterJobs posts body(i) to /api/job/register for i in [0, n) from
// workers keep-alive clients until done, ctx ends or 100 requests failed
// (one answered 503 is sent again, after its Retry-After, for up to
// retry503For first).
func RegisterJobs(ctx context.Context, api *Client, n, workers int, body func(i int) string) Registration {
	var next, failures, retried atomic.Int64
	res := Registration{Answers: map[int]int{}, First: map[int]string{}}
	var mu sync.Mutex
	var once sync.Once
	lat := make([][]float64, workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	// post sends registration i once; an answer outside 2xx is counted.
	post := func(i int) (retryAfter time.Duration, err error) {
		err = api.PostJSON("/api/job/register", body(i))
		var se *StatusError
		if errors.As(err, &se) {
			mu.Lock()
			res.Answers[se.Code]++
			if _, ok := res.First[se.Code]; !ok {
				res.First[se.Code] = se.Error()
			}
			mu.Unlock()
			if se.Code == 503 {
				return max(se.RetryAfter, 200*time.Millisecond), err
			}
		}
		return 0, err
	}
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil && failures.Load() < 100 {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s := time.Now()
				wait, err := post(i)
				// A 503 says the write was not made now (no scheduler leads
				// at the moment: an election, a term lost under load) and
				// when to ask again: a client sends it again then.
				for wait > 0 && time.Since(s)+wait <= retry503For && SleepCtx(ctx, wait) == nil {
					retried.Add(1)
					wait, err = post(i)
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

// Refusals sums up the answers outside 2xx: each status, how many and
// its first answer ("" when there were none).
func (r Registration) Refusals() string {
	codes := slices.Sorted(maps.Keys(r.Answers))
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d × %d (the first: %s)", r.Answers[c], c, FirstLine(r.First[c])))
	}
	return strings.Join(parts, "; ")
}

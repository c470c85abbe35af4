package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Triggers is a bounded stream of API triggers: eight clients, each on its
// own ticker, triggering the jobs named round-robin until Stop.
type Triggers struct {
	Sent, Failed atomic.Int64 // triggers answered 2xx, and the others
	cancel       context.CancelFunc
	wg           sync.WaitGroup
}

// StartTriggers triggers names at rate per second in all through api (none
// when rate or names is 0).
func StartTriggers(ctx context.Context, api *Client, names []string, rate int) *Triggers {
	const workers = 8
	ctx, cancel := context.WithCancel(ctx)
	s := &Triggers{cancel: cancel}
	if rate <= 0 || len(names) == 0 {
		return s
	}
	period := time.Duration(float64(time.Second) * workers / float64(rate))
	for w := range workers {
		s.wg.Go(func() {
			t := time.NewTicker(period)
			defer t.Stop()
			for k := w; ; k += workers {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if api.Trigger(names[k%len(names)]) != nil {
					s.Failed.Add(1)
				} else {
					s.Sent.Add(1)
				}
			}
		})
	}
	return s
}

// Stop ends the stream and waits for its clients (idempotent).
func (s *Triggers) Stop() {
	s.cancel()
	s.wg.Wait()
}

package bench

import (
	"context"
	"time"
)

// Side is one way of starting n pods; its rounds are interleaved with the other sides'
// (bindingModes), so a node that drifts over the run (slower as it goes) charges all alike.
type Side struct {
	Name string
	Run  func(ctx context.Context, label string, n int) (time.Duration, error)
	// warm, when set, runs once before the rounds of n pods (untimed).
	Warm func(ctx context.Context, n int) error
}

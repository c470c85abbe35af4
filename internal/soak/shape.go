package soak

import (
	"context"
	"math/rand/v2"
	"syscall"
	"time"
)

// Shape is one deployment the soak runs against: it starts and stops the
// registry, the schedulers and the engine, names the schedulers' API base
// URLs, and offers the faults it can inject. A new shape is one more
// implementation and one more case in NewShape.
type Shape interface {
	Name() string
	Start(ctx context.Context) error
	// APIs are the schedulers' base URLs (any answers; standbys forward).
	APIs() []string
	// Faults are the faults this shape can inject.
	Faults() []FaultKind
	// Heal undoes every fault still on (the nemesis ends with it).
	Heal(ctx context.Context) error
	Stop() error
}

// FaultKind is a fault a shape can inject. Inject puts it on and returns
// how to heal it; the nemesis holds it for a drawn time of at least
// MinHold (as long as MinHold if Fixed) before healing.
type FaultKind struct {
	Name    string
	MinHold time.Duration
	MaxHold time.Duration
	Inject  func(ctx context.Context, rng *rand.Rand) (heal func(context.Context) error, detail string, err error)
}

// pauseLeader is the pause-leader fault of a shape: the leader stopped
// (SIGSTOP) for the hold, then continued (SIGCONT).
func pauseLeader(leader func(context.Context) (*sched, error)) func(context.Context, *rand.Rand) (func(context.Context) error, string, error) {
	return func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
		s, err := leader(ctx)
		if err != nil {
			return nil, "", err
		}
		if err := s.p.signal(syscall.SIGSTOP); err != nil {
			return nil, "", err
		}
		return func(context.Context) error { return s.p.signal(syscall.SIGCONT) }, s.p.name, nil
	}
}

package soak

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Nemesis injects a shape's faults on a schedule drawn from its seed:
// every Gap (drawn in [MinGap, MaxGap]) one fault, chosen uniformly among
// the shape's kinds, held for a drawn time, then healed. The same seed
// draws the same kinds, gaps and holds.
type Nemesis struct {
	Shape          Shape
	Seed           uint64
	MinGap, MaxGap time.Duration
	Log            *slog.Logger
}

// Run injects faults until ctx ends or until, then heals everything; it
// returns the faults injected (a failed injection is logged and skipped).
func (n Nemesis) Run(ctx context.Context, until time.Time) []Fault {
	rng := rand.New(rand.NewPCG(n.Seed, n.Seed^0x5eed))
	kinds := n.Shape.Faults()
	var out []Fault
	for {
		gap := draw(rng, n.MinGap, n.MaxGap)
		k := kinds[rng.IntN(len(kinds))]
		hold := draw(rng, k.MinHold, k.MaxHold)
		if !sleep(ctx, gap) || time.Now().Add(hold).After(until) {
			break
		}
		start := time.Now()
		heal, detail, err := k.Inject(ctx, rng)
		if err != nil {
			n.Log.Warn("nemesis: inject failed", "kind", k.Name, "err", err)
			continue
		}
		n.Log.Info("nemesis: fault on", "kind", k.Name, "detail", detail, "hold", hold)
		sleep(ctx, hold)
		hctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := heal(hctx); err != nil {
			n.Log.Warn("nemesis: heal failed", "kind", k.Name, "err", err)
		}
		cancel()
		out = append(out, Fault{Kind: k.Name, Start: start, End: time.Now(), Detail: detail})
		n.Log.Info("nemesis: fault healed", "kind", k.Name)
	}
	hctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Shape.Heal(hctx); err != nil {
		n.Log.Warn("nemesis: final heal", "err", err)
	}
	return out
}

func draw(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// errNoLeader: no scheduler says it leads.
var errNoLeader = fmt.Errorf("soak: no scheduler leads")

package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// Terms hands out the terms this instance leads (election.Candidate on
// ZooKeeper, election.Solo in the embedded mode).
type Terms interface {
	Terms() <-chan *election.Term
}

// Loop is one of a term's loops.
type Loop struct {
	Name string
	Run  func(ctx context.Context) error
}

// Config is what the lifecycle needs.
type Config struct {
	Terms Terms
	// Registry makes the registry a term writes through, behind fence (the
	// lifecycle passes the term's: every write checks the term's election
	// node); registry.Options.Fence.
	Registry func(fence func() []store.Op) *registry.Registry
	// CatchUp is the barrier a new term waits at; nil: none (a registry
	// read straight from its store).
	CatchUp registry.Barrier
	// Start builds the term's loops over its fenced registry.
	Start func(ctx context.Context, t *election.Term, reg *registry.Registry) ([]Loop, error)
	// Leading, if set, is told when a term's loops start and stop.
	Leading func(bool)
	Clock   clock.Clock
	Log     *slog.Logger
}

func (c *Config) defaults() {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// CatchUpWait bounds how long a new term waits for the registry copy to
// catch up with the terms before it.
const CatchUpWait = 30 * time.Second

// FailurePause is the least time between a term that failed and the next
// term's start, so a failure that recurs at once does not spin.
const FailurePause = time.Second

// Run serves every term handed out until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	for {
		select {
		case <-ctx.Done():
			return nil
		case term := <-cfg.Terms.Terms():
			if term.Context().Err() != nil {
				continue
			}
			began := cfg.Clock.Now()
			err := Serve(term, cfg)
			if err == nil || ctx.Err() != nil {
				continue
			}
			cfg.Log.Error("leader work failed; leaving the term", "term", term.Seq(), "err", err)
			term.End(err)
			if wait := FailurePause - cfg.Clock.Now().Sub(began); wait > 0 {
				t := cfg.Clock.NewTimer(wait)
				select { // do not spin on a failure that recurs at once
				case <-ctx.Done():
				case <-t.C():
				}
				t.Stop()
			}
		}
	}
}

// Serve runs one term: the catch-up barrier, then the term's loops until
// the term ends or one of them fails (which ends it). It returns once
// every loop has stopped, so the next term never overlaps this one; the
// error is the first loop's failure (nil when the term just ended).
func Serve(term *election.Term, cfg Config) error {
	cfg.defaults()
	ctx := term.Context()
	log := cfg.Log.With("term", term.Seq())
	reg := cfg.Registry(term.Fence)
	if err := catchUp(ctx, cfg, reg, term); err != nil {
		if ctx.Err() != nil {
			return nil // the term ended first
		}
		return err
	}
	loops, err := cfg.Start(ctx, term, reg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	log.Info("leading", "node", term.Node())
	if cfg.Leading != nil {
		cfg.Leading(true)
		defer cfg.Leading(false)
	}
	errc := make(chan error, len(loops))
	for _, l := range loops {
		go func() {
			err := l.Run(ctx)
			if err != nil {
				err = fmt.Errorf("%s: %w", l.Name, err)
			}
			errc <- err
		}()
	}
	var first error
	for range loops {
		if err := <-errc; err != nil && first == nil && ctx.Err() == nil {
			first = err
			term.End(err) // one loop failed: stop the others
		}
	}
	log.Info("no longer leading", "cause", context.Cause(ctx))
	if errors.Is(first, context.Canceled) {
		first = nil
	}
	return first
}

// catchUp returns once the registry copy holds every write made before
// the term began. The election hands a standby the term as soon as the old
// leader's node is gone, while the notifications of that leader's last
// writes (a launch, a task's end) may still be queued to the copy: a
// leader reading the copy before they are applied would take a finished
// task for running and fail it over, or a launched one for unknown and
// kill it. The term's first write, fenced, is read back through the
// copy's watch, which applies notifications in order.
func catchUp(ctx context.Context, cfg Config, reg *registry.Registry, term *election.Term) error {
	if cfg.CatchUp == nil {
		return nil
	}
	value, err := json.Marshal(map[string]any{"term": term.Seq(), "node": term.Node(), "at": cfg.Clock.Now().UTC()})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, CatchUpWait)
	defer cancel()
	began := cfg.Clock.Now()
	if err := reg.Term().BeginTerm(cctx, value, cfg.CatchUp); err != nil {
		return fmt.Errorf("catch up with the registry before leading: %w", err)
	}
	cfg.Log.Info("registry cache caught up with the terms before", "term", term.Seq(), "took", cfg.Clock.Now().Sub(began).Round(time.Microsecond))
	return nil
}

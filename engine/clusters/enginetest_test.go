package clusters_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/clusters"
	"github.com/ejcloud/elasticjob/engine/enginetest"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/engine/mesos/agents"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// embeddedTerm is one embedded Mesos master with simulated agents, in process on
// loopback, and a scheduler client subscribed to it: one cluster of a composition.
func embeddedTerm(t *testing.T, clk *clock.Fake, agentsN int, seed uint64) (clusters.Term, *embedded.Cluster) {
	t.Helper()
	c, err := embedded.New(embedded.Config{WorkDir: t.TempDir(), Clock: clk,
		Sim: &embedded.SimConfig{Agents: agentsN, AgentCPUs: 4, AgentMemMB: 4096, TaskMin: time.Hour, ExecutorIdle: 24 * time.Hour, Seed: seed}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = c.Close() })
	client := mesos.New(mesos.Config{URL: c.URL(), FrameworkName: "ej-clusters", BackoffMin: time.Millisecond,
		BackoffMax: 10 * time.Millisecond, Logger: quiet})
	inv := &agents.Engine{Client: agents.New(c.URL()), URL: c.URL(), Embedded: true}
	return term{client, inv}, c
}

// term is a Mesos client with its master's agents as its inventory.
type term struct {
	*mesos.Client
	engine.Inventory
}

func (m term) Run(ctx context.Context, h engine.Handler) error { return m.Client.Run(ctx, h) }

// TestEngineContract runs the engine contract on two embedded clusters composed: every
// check passes through the composition's routing (offers and agents qualified, calls
// sent to the cluster the ids name).
func TestEngineContract(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Subject {
		clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		a, _ := embeddedTerm(t, clk, 1, 7)
		b, _ := embeddedTerm(t, clk, 1, 8)
		e, err := clusters.New([]clusters.Member{{Name: "dc1", Term: a}, {Name: "dc2", Term: b}}, clk, quiet)
		if err != nil {
			t.Fatal(err)
		}
		return enginetest.Subject{
			Driver: e,
			Run:    e.Run,
			Finish: func(context.Context, string) error { clk.Advance(2 * time.Hour); return nil },
		}
	})
}

package mesos_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/enginetest"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
)

// TestEngineContract runs the engine contract (engine/enginetest) on the Mesos client
// against the embedded master with one simulated agent, in process on loopback. Simulated
// tasks run until the injected clock passes their hour.
func TestEngineContract(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Subject {
		clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		c, err := embedded.New(embedded.Config{WorkDir: t.TempDir(), Clock: clk,
			Sim: &embedded.SimConfig{Agents: 1, AgentCPUs: 4, AgentMemMB: 4096, TaskMin: time.Hour, ExecutorIdle: 24 * time.Hour, Seed: 7}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := c.Start(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); _ = c.Close() })
		client := mesos.New(mesos.Config{URL: c.URL(), FrameworkName: "ej-contract", BackoffMin: time.Millisecond,
			BackoffMax: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		return enginetest.Subject{
			Driver: client,
			Run:    func(ctx context.Context, h engine.Handler) error { return client.Run(ctx, h) },
			Finish: func(context.Context, string) error { clk.Advance(2 * time.Hour); return nil },
		}
	})
}

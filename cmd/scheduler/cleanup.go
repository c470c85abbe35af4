package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
)

// cleanup is the whole process with recover=cleanup: the embedded agent
// shuts down every executor the last run of data_dir left running (each
// kills its tasks and reports them; the reports are checkpointed and reach
// the history at the next start), then the process exits. This is how an
// operator stops everything on purpose: SIGTERM alone leaves the running
// work to the next start.
func cleanup(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	if cfg.MesosURL != "" {
		return errors.New("recover=cleanup stops what the embedded agent left running; with mesos_url the executors belong to that Mesos cluster's agents (stop its framework there)")
	}
	cl, err := embedded.New(embeddedConfig(cfg, log))
	if err != nil {
		return fmt.Errorf("embedded mesos: %w", err)
	}
	if err := cl.Start(ctx); err != nil {
		return fmt.Errorf("embedded mesos: %w", err)
	}
	n := cl.Recovered()
	log.Info("recover=cleanup: shutting down the executors the last run left", "executors", n)
	select {
	case <-cl.Cleaned():
	case <-ctx.Done():
		err = errors.New("recover=cleanup: stopped before every executor had ended; run it again")
	}
	if cerr := cl.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("embedded mesos: %w", cerr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "scheduler: recover=cleanup: shut down %d executors left running (and their tasks); their ends are recorded at the next start\n", n)
	return nil
}

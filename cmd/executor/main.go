// Command executor is the ElasticJob-Cloud Mesos executor. A Mesos agent (or
// the scheduler's embedded agent) starts it with the MESOS_* environment;
// `executor --help` lists its flags. All logic lives in package executor.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ejcloud/elasticjob/executor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		os.Exit(1)
	}
}

// run is main without the process globals. A stop by signal is a clean exit.
func run(ctx context.Context, args, env []string, stdout, stderr io.Writer) error {
	err := executor.Main(ctx, args, env, stdout, stderr)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

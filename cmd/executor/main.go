// Command executor is the ElasticJob-Cloud executor. A Mesos agent (or the
// scheduler's embedded agent) starts it with the MESOS_* environment;
// `executor pod` runs one task in a Kubernetes pod (the scheduler's
// Kubernetes engine sets its environment); `executor install PATH` copies it
// to PATH (the init container of an app with an image of its own).
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

	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
	"github.com/ejcloud/elasticjob/executor"
)

func main() {
	tenant.Init() // pid 1 of a tenant's namespaces when the embedded agent confines it (never returns then)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	var exit *executor.ExitError
	if errors.As(err, &exit) {
		os.Exit(1) // the task failed or was killed: reported already
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "executor:", err)
		os.Exit(1)
	}
}

// run is main without the process globals. A stop by signal is a clean exit.
func run(ctx context.Context, args, env []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "pod":
			return executor.PodMain(ctx, env, stdout, stderr)
		case "install":
			if len(args) != 2 {
				return errors.New("usage: executor install PATH")
			}
			return executor.InstallMain(args[1])
		}
	}
	err := executor.Main(ctx, args, env, stdout, stderr)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

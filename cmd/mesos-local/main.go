// Command mesos-local runs the embedded single-node Mesos master+agent
// (package engine/mesos/embedded) as a process of its own, so that several
// schedulers on one machine can share it with mesos_url. It serves the
// Mesos v1 scheduler and executor APIs on loopback, offers this machine's
// resources and runs executors as processes of their own under --work-dir.
// It prints "mesos-local: listening on URL" on stdout once it serves and
// stops on SIGTERM or SIGINT, leaving the executors of checkpointing
// frameworks running for its next start to take over; --recover=cleanup
// stops them instead. `mesos-local --help` lists its flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mesos-local:", err)
		os.Exit(1)
	}
}

// Command ejsoak runs the fault soak (package soak): a workload on a
// cluster shape under faults drawn from a seed, then the checker over
// every run. It exits 1 when the checker found an anomaly.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ejsoak:", err)
		os.Exit(1)
	}
}

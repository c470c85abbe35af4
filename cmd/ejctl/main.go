// Command ejctl is the scheduler's command-line client; see package ejctl.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ejcloud/elasticjob/ejctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ejctl.Run(ctx, os.Args[1:], ejctl.Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		StderrIsTTY: func() bool { return ejctl.IsTerminal(os.Stderr) },
		StdinIsTTY:  func() bool { return ejctl.IsTerminal(os.Stdin) },
	})
	stop()
	os.Exit(code)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

// options are the parsed flags.
type options struct {
	port        int
	address     string
	allowRemote bool
	workDir     string
	cpus        float64
	memMB       float64
	diskMB      float64
	ports       string
	hostname    string
	level       slog.Level
	cpuProfile  string
	recover     string
	recoveryTO  time.Duration
	principal   string
	secretFile  string
	sim         simFlags
}

const usageHead = `Usage: mesos-local [flags]

The embedded single-node Mesos master+agent as a process of its own: several
schedulers on this machine share it with mesos_url=URL. With --secret-file
its scheduler and operator APIs and its /state, /slaves, /files/read and
/metrics/snapshot require HTTP Basic --principal and that secret (give the
schedulers mesos_principal and mesos_secret); without it they are open to
anything on this machine, the tasks it runs included. Executors always
authenticate with a token of their own. It listens on loopback unless
--allow-remote is given.
Stopping it (SIGTERM, SIGINT) or killing it leaves the executors of frameworks
that checkpoint (the scheduler's do) running: the next start on the same
--work-dir takes them over, as a Mesos agent recovers its executors, and those
it finds gone are reported failed. Executors of frameworks that do not
checkpoint are shut down. To stop everything, stop mesos-local and run
"mesos-local --recover=cleanup" with the same --work-dir and --port: it shuts
down every executor the last run left and exits. A scheduler that disconnects
keeps its tasks for its framework's failover_timeout.

`

func parseArgs(args []string, stdout io.Writer) (options, error) {
	var o options
	var level string
	fs := flag.NewFlagSet("mesos-local", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&o.port, "port", 5050, "port of the master and agent APIs (0: any free port)")
	fs.StringVar(&o.address, "address", "127.0.0.1", "address to listen on")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback --address (anyone who reaches it can run commands)")
	fs.StringVar(&o.workDir, "work-dir", "mesos-local", "directory of the executor sandboxes (one mesos-local per directory)")
	fs.Float64Var(&o.cpus, "cpus", 0, "CPUs offered (0: this machine's)")
	fs.Float64Var(&o.memMB, "mem-mb", 0, "memory offered in MB (0: this machine's)")
	fs.Float64Var(&o.diskMB, "disk-mb", 0, "disk offered in MB (0: "+strconv.Itoa(embedded.DefaultDiskMB)+")")
	fs.StringVar(&o.ports, "ports", "[31000-32000]", "port ranges offered to tasks")
	fs.StringVar(&o.hostname, "hostname", "", "agent host name reported to schedulers (empty: this machine's)")
	fs.StringVar(&level, "log-level", "info", "debug, info, warn or error (logs go to stderr)")
	fs.StringVar(&o.cpuProfile, "cpu-profile", "", "write a Go CPU profile (go tool pprof) of the whole run to this file")
	fs.StringVar(&o.recover, "recover", embedded.RecoverReconnect, "reconnect: take over the executors an earlier run on --work-dir left running; "+
		"cleanup: shut them all down (their tasks are killed) and exit (Mesos --recover)")
	fs.DurationVar(&o.recoveryTO, "recovery-timeout", embedded.DefaultRecoveryTimeout, "how long an executor keeps its tasks running "+
		"while it cannot reach mesos-local; then it kills them and exits (Mesos --recovery_timeout)")
	fs.StringVar(&o.principal, "principal", "elasticjob", "framework principal the --secret-file secret authenticates")
	fs.StringVar(&o.secretFile, "secret-file", "", "file holding the framework secret (readable by its owner only); "+
		"empty: the scheduler and operator APIs are open to every process on this machine")
	o.sim.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageHead)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fmt.Fprint(stdout, simUsage)
		}
		return o, usageErr(err)
	}
	if fs.NArg() > 0 {
		return o, usageErr(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := o.level.UnmarshalText([]byte(level)); err != nil {
		return o, usageErr(fmt.Errorf("--log-level %q: want debug, info, warn or error", level))
	}
	if err := o.sim.check(fs); err != nil {
		return o, usageErr(err)
	}
	return o, o.validate()
}

func usageErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w (see mesos-local --help)", err)
}

func (o options) validate() error {
	switch {
	case o.port < 0 || o.port > 65535:
		return usageErr(fmt.Errorf("--port %d: want 0..65535", o.port))
	case o.workDir == "":
		return usageErr(errors.New("--work-dir is empty"))
	case o.address == "":
		return usageErr(errors.New("--address is empty"))
	case o.recover != embedded.RecoverReconnect && o.recover != embedded.RecoverCleanup:
		return usageErr(fmt.Errorf("--recover %q: want reconnect or cleanup", o.recover))
	case o.recoveryTO <= 0:
		return usageErr(fmt.Errorf("--recovery-timeout %v: want a positive duration", o.recoveryTO))
	case !o.allowRemote && !isLoopback(o.address):
		return usageErr(fmt.Errorf("refusing to listen on %s: mesos-local has no authentication; "+
			"use a loopback address or pass --allow-remote", o.address))
	}
	return nil
}

func isLoopback(addr string) bool {
	if addr == "localhost" {
		return true
	}
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}

// run is the whole process: it serves until ctx ends, then shuts down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, stdout)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.level}))
	if err := os.MkdirAll(o.workDir, 0o750); err != nil {
		return fmt.Errorf("create work dir: %w", err)
	}
	sim, _ := o.sim.config() // checked by parseArgs
	if sim != nil && o.sim.record != "" {
		w, err := runlog.Open(o.sim.record)
		if err != nil {
			return fmt.Errorf("--sim-record: %w", err)
		}
		defer w.Close()
		sim.Record = simRecorder(w, log)
	}
	secret, err := readSecret(o.secretFile)
	if err != nil {
		return err
	}
	principal := o.principal
	if secret == "" {
		principal = ""
		log.Warn("no --secret-file: the scheduler and operator APIs accept any caller on this machine, tasks included")
	}
	cl, err := embedded.New(embedded.Config{Addr: net.JoinHostPort(o.address, strconv.Itoa(o.port)),
		WorkDir: o.workDir, CPUs: o.cpus, MemMB: o.memMB, DiskMB: o.diskMB, Ports: o.ports,
		Hostname: o.hostname, Logger: log, Sim: sim, Recover: o.recover, RecoveryTimeout: o.recoveryTO, Process: "mesos-local",
		Principal: principal, Secret: secret})
	if err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := cl.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if o.recover == embedded.RecoverCleanup {
		return cleanup(ctx, cl, stdout, log)
	}
	fmt.Fprintf(stdout, "mesos-local: listening on %s\n", cl.URL())
	<-ctx.Done()
	log.Info("stopping: executors of checkpointing frameworks keep running for the next start")
	if err := cl.Close(); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	log.Info("stopped")
	return nil
}

// cleanup waits for every executor the last run left to be shut down
// (--recover=cleanup), then stops.
func cleanup(ctx context.Context, cl *embedded.Cluster, stdout io.Writer, log *slog.Logger) error {
	n := cl.Recovered()
	log.Info("shutting down the executors of the earlier run", "executors", n)
	var err error
	select {
	case <-cl.Cleaned():
	case <-ctx.Done():
		err = errors.New("stopped before every executor had ended")
	}
	if cerr := cl.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("stop: %w", cerr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mesos-local: cleanup done: shut down %d executors of the earlier run\n", n)
	return nil
}

// readSecret reads the framework secret from path ("" for none): its first
// line, from a file no one but its owner may read.
func readSecret(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--secret-file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("--secret-file %s: mode %v lets others read it; chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--secret-file: %w", err)
	}
	secret, _, _ := strings.Cut(string(b), "\n")
	if secret = strings.TrimSpace(secret); secret == "" {
		return "", fmt.Errorf("--secret-file %s is empty", path)
	}
	return secret, nil
}

package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/ejcloud/elasticjob/jobs"
)

// ShardingContext is what each run of a shard is handed.
type ShardingContext = jobs.ShardingContext

// SimpleJob is a job that runs one shard per call.
type SimpleJob interface {
	// Execute runs the shard. A non-nil error fails the run. ctx ends when
	// the run is cancelled: the task is killed, the run's timeoutSeconds
	// passed, or the process is asked to stop.
	Execute(ctx context.Context, sc ShardingContext) error
}

// JobFunc adapts a function to a SimpleJob.
type JobFunc func(ctx context.Context, sc ShardingContext) error

// Execute calls f.
func (f JobFunc) Execute(ctx context.Context, sc ShardingContext) error { return f(ctx, sc) }

// Environment variables the executor sets for SDK processes.
const (
	// EnvShardingContext holds the sharding context JSON (also the last
	// command-line argument).
	EnvShardingContext = "ELASTICJOB_SHARDING_CONTEXT"
	// EnvStreamingProcess is "true" when the job's props have
	// streaming.process=true.
	EnvStreamingProcess = "ELASTICJOB_STREAMING_PROCESS"
	// EnvProtocol is "1" when the executor keeps the process resident and
	// sends it runs over the line protocol (see the package documentation).
	EnvProtocol = "ELASTICJOB_DAEMON_PROTOCOL"
)

// Run is the one entry point of a job's main: it runs job as the executor
// asked, then exits the process. Run once (TRANSIENT jobs, and DAEMON jobs
// without the line protocol) it reads the sharding context from the last
// argument or ELASTICJOB_SHARDING_CONTEXT, calls Execute and exits 0, or 1
// with the error on stderr. Resident (ELASTICJOB_DAEMON_PROTOCOL=1) it
// serves runs over the line protocol until the executor closes it or
// SIGTERM, then exits 0. SIGTERM and SIGINT cancel the run in progress.
func Run(job SimpleJob) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := Main(ctx, job, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// RunDataflow is Run(Dataflow(job)).
func RunDataflow[T any](job DataflowJob[T]) { Run(Dataflow(job)) }

// Main is Run without exiting: it returns the exit code. args are the
// command-line arguments after the program name.
func Main(ctx context.Context, job SimpleJob, args []string, getenv func(string) string, stderr io.Writer) int {
	if getenv(EnvProtocol) == "1" {
		in, out, err := protocolFiles()
		if err != nil {
			fmt.Fprintln(stderr, "elasticjob sdk:", err)
			return 2
		}
		defer in.Close()
		defer out.Close()
		if err := Serve(ctx, job, in, out, stderr); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "elasticjob sdk:", err)
			return 1
		}
		return 0
	}
	sc, err := ContextFrom(args, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "elasticjob sdk:", err)
		return 2
	}
	if err := call(ctx, job, sc, stderr); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// ContextFrom reads the sharding context from the last argument when it is
// a JSON object, else from ELASTICJOB_SHARDING_CONTEXT.
func ContextFrom(args []string, getenv func(string) string) (ShardingContext, error) {
	var sc ShardingContext
	if n := len(args); n > 0 && strings.HasPrefix(strings.TrimSpace(args[n-1]), "{") {
		if err := json.Unmarshal([]byte(args[n-1]), &sc); err != nil {
			return sc, fmt.Errorf("the last argument is not a sharding context: %w", err)
		}
		return sc, nil
	}
	v := getenv(EnvShardingContext)
	if v == "" {
		return sc, errors.New("no sharding context: the ElasticJob executor passes it as the last argument and in " + EnvShardingContext)
	}
	if err := json.Unmarshal([]byte(v), &sc); err != nil {
		return sc, fmt.Errorf("%s is not a sharding context: %w", EnvShardingContext, err)
	}
	return sc, nil
}

// call runs the job, turning a panic into an error (its stack goes to
// stderr).
func call(ctx context.Context, job SimpleJob, sc ShardingContext, stderr io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "panic: %v\n%s", r, debug.Stack())
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return job.Execute(ctx, sc)
}

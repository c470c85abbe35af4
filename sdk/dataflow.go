package sdk

import (
	"context"
	"os"
)

// DataflowJob is a job that fetches items and processes them.
type DataflowJob[T any] interface {
	// FetchData returns the shard's next items; none ends a streaming run.
	FetchData(ctx context.Context, sc ShardingContext) ([]T, error)
	// ProcessData processes what FetchData returned.
	ProcessData(ctx context.Context, sc ShardingContext, items []T) error
}

// Dataflow adapts a DataflowJob to a SimpleJob. Each run fetches once and
// processes what it got (nothing when nothing was fetched); with the job's
// props streaming.process=true (the executor sets
// ELASTICJOB_STREAMING_PROCESS=true) it fetches and processes repeatedly
// until a fetch returns no items, an error, or the run is cancelled.
func Dataflow[T any](job DataflowJob[T]) SimpleJob {
	return DataflowStreaming(job, os.Getenv(EnvStreamingProcess) == "true")
}

// DataflowStreaming is Dataflow with the streaming mode given.
func DataflowStreaming[T any](job DataflowJob[T], streaming bool) SimpleJob {
	return &dataflow[T]{job: job, streaming: streaming}
}

type dataflow[T any] struct {
	job       DataflowJob[T]
	streaming bool
}

func (d *dataflow[T]) Execute(ctx context.Context, sc ShardingContext) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		items, err := d.job.FetchData(ctx, sc)
		if err != nil || len(items) == 0 {
			return err
		}
		if err := d.job.ProcessData(ctx, sc, items); err != nil {
			return err
		}
		if !d.streaming {
			return nil
		}
	}
}

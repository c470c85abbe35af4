// Command go-app is an example ElasticJob-Cloud job written with the Go SDK
// (package sdk). The job parameter picks what a run does:
//
//   - "" or anything else: a SimpleJob that prints its shard and how many
//     runs this process has served (a DAEMON job with props
//     sdk.protocol=line keeps the process, so the count grows);
//   - "dataflow": a DataflowJob that fetches this shard's orders in batches
//     and processes them (with props streaming.process=true, until none
//     are left);
//   - "fail": a run that fails, to see failures reported.
//
// Build it with `make -C examples` into examples/dist/go-app.tar.gz and
// publish that with bootstrapScript "bin/go-app".
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/sdk"
)

func main() {
	sdk.Run(&app{started: time.Now(), orders: sdk.Dataflow[order](&orders{})})
}

// app dispatches on the job parameter.
type app struct {
	started time.Time
	runs    atomic.Int64 // runs served by this process
	orders  sdk.SimpleJob
}

func (a *app) Execute(ctx context.Context, sc sdk.ShardingContext) error {
	n := a.runs.Add(1)
	fmt.Printf("go-app pid=%d run=%d up=%s job=%s shard=%d/%d parameter=%q task=%s\n", os.Getpid(), n,
		time.Since(a.started).Round(time.Millisecond), sc.JobName, sc.ShardingItem, sc.ShardingTotalCount,
		sc.ShardingParameter, sc.TaskID)
	switch strings.TrimSpace(sc.JobParameter) {
	case "dataflow":
		return a.orders.Execute(ctx, sc)
	case "fail":
		return errors.New("go-app: failing on purpose (jobParameter=fail)")
	}
	return nil
}

type order struct {
	ID     int
	Amount int
}

// orders serves each shard the orders whose id modulo the shard count is
// its item, three at a time, from an in-memory table that lives as long as
// the process.
type orders struct {
	next atomic.Int64 // next order id to consider, across runs
}

const totalOrders = 20

func (o *orders) FetchData(ctx context.Context, sc sdk.ShardingContext) ([]order, error) {
	var batch []order
	for len(batch) < 3 {
		id := int(o.next.Add(1))
		if id > totalOrders {
			break
		}
		if id%max(sc.ShardingTotalCount, 1) == sc.ShardingItem {
			batch = append(batch, order{ID: id, Amount: id * 10})
		}
	}
	return batch, nil
}

func (o *orders) ProcessData(ctx context.Context, sc sdk.ShardingContext, batch []order) error {
	for _, x := range batch {
		fmt.Printf("go-app shard=%d processed order %d (amount %d)\n", sc.ShardingItem, x.ID, x.Amount)
	}
	return nil
}

package main

import (
	"log/slog"

	"github.com/ejcloud/elasticjob/backfill"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/leader"
	"github.com/ejcloud/elasticjob/registry"
)

// backfillLoop is the term's backfill loop: it queues each backfill's
// next run when its job is idle, over the term's fenced registry.
func backfillLoop(reg *registry.Registry, wake func(), log *slog.Logger) leader.Loop {
	l := &backfill.Loop{Registry: reg, Clock: clock.Real{}, Log: log.With("subsystem", "backfill"), Wake: wake}
	return leader.Loop{Name: "backfill", Run: l.Run}
}

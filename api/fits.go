package api

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/round"
)

// checkFits applies the launcher's rule (round.FitsEmpty) to a job at
// registration: a job whose single shard, with its app's executor beside
// it, fits no agent Mesos knows is refused (it would wait forever); one
// whose execution (every shard together, the executor's share counted on
// every agent it needs) can never fit the agents together is accepted with
// a Warning header (agents may join; it waits as never_fits until then).
// Without known agents, or when they cannot be read, nothing is checked.
func (s *jobHandlers) checkFits(c context.Context, cfg jobs.Config, warn func(string)) error {
	if s.eng == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c, capacityTimeout)
	defer cancel()
	each, err := s.eng.Agents(ctx)
	if err != nil || len(each) == 0 {
		return nil
	}
	exec := app.HTTPOnly()
	if cfg.AppName != "" {
		exec = app.Config{}
		if a, err := s.regIn(c).Config().App(c, cfg.AppName); err == nil {
			exec = a
		}
	}
	agents := make([]round.Agent, 0, len(each))
	for _, a := range each {
		agents = append(agents, round.Agent{ID: a.ID, Total: offers.Resources{CPU: offers.CPUs(a.CPUs), MemMB: offers.MemMB(a.MemMB)}})
	}
	f := round.FitsEmpty(agents, cfg.ShardingTotalCount,
		offers.Resources{CPU: offers.CPUs(cfg.CPUCount), MemMB: offers.MemMB(cfg.MemoryMB)},
		offers.Resources{CPU: offers.CPUs(exec.CPUCount), MemMB: offers.MemMB(exec.MemoryMB)})
	switch {
	case f.Shard:
		return fmt.Errorf("%w: it could never launch: %s; lower cpuCount or memoryMB (or the app's executor), or add a larger agent",
			jobs.ErrInvalid, strings.TrimPrefix(f.Message, "can never fit: "))
	case f.Never:
		warn("executions will wait until the cluster grows: " + f.Message)
	}
	return nil
}

const capacityTimeout = 3 * time.Second // the agents' list comes from the master

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

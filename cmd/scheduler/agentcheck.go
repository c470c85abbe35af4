package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/engine/mesos/agents"
	"github.com/ejcloud/elasticjob/leader"
)

// agentCheckEvery is how often a term reads the agents' flags again (agents join);
// agentCheckAfter how long after the term's start it reads them first: the term's first
// seconds are its takeover's (at 1,000 simulated agents the first check, its reads and
// 1,000 warnings, ran beside the term's first launch round).
const (
	agentCheckEvery = 2 * time.Minute
	agentCheckAfter = 10 * time.Second
)

// agentIsolationLoop, on real Mesos, reads every agent's flags agentCheckAfter into the
// term and then every agentCheckEvery, and warns once per agent (again when what it lacks changes) about
// one that does not isolate namespaces from each other: without the namespaces/pid and
// filesystem/linux isolators, or with --switch_user=false, a task there sees and signals
// other namespaces' processes and reads the agent's work directory (docs/mesos.md).
func (l *leaderWork) agentIsolationLoop(log *slog.Logger) []leader.Loop {
	r, ok := l.engines.reads.(*agents.Engine)
	if !ok || r.Embedded || l.cfg.MesosURL == "" {
		return nil
	}
	c := r.Client
	return []leader.Loop{{Name: "agent isolation check", Run: func(ctx context.Context) error {
		warned := map[string]string{}
		first := time.NewTimer(agentCheckAfter)
		defer first.Stop()
		select {
		case <-ctx.Done():
			return nil
		case <-first.C:
		}
		t := time.NewTicker(agentCheckEvery)
		defer t.Stop()
		for {
			ws, err := c.TenantWeaknesses(ctx)
			if err != nil {
				log.Debug("agent isolation check: cannot list the agents", "err", err)
			}
			for _, w := range ws {
				msg := w.String()
				if warned[w.Agent.ID] == msg {
					continue
				}
				warned[w.Agent.ID] = msg
				log.Warn("a Mesos agent does not keep namespaces' tasks apart: there a task can see and signal other namespaces' processes "+
					"and read the agent's files; start agents with --isolation including filesystem/linux,namespaces/pid (docs/mesos.md)",
					"agent", msg)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}}}
}

package api

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/gin-gonic/gin"
)

// checkFits refuses a job whose single shard (with its app's executor)
// can never fit the largest agent Mesos knows: it would wait forever. A
// READY execution whose shards together exceed every agent together is
// accepted with a Warning header (agents may join). Without known agents,
// or when they cannot be read, nothing is checked.
func (s *Server) checkFits(c *gin.Context, cfg jobs.Config) error {
	if s.ops == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c, capacityTimeout)
	defer cancel()
	capa, err := s.ops.Capacity(ctx)
	if err != nil || capa.Agents == 0 {
		return nil
	}
	var exec app.Config
	if cfg.AppName != "" {
		if a, err := s.reg.App(c, cfg.AppName); err == nil {
			exec = a
		}
	}
	cpu, mem := cfg.CPUCount+exec.CPUCount, cfg.MemoryMB+exec.MemoryMB
	if cpu > capa.LargestCPUs || mem > capa.LargestMem {
		return fmt.Errorf("%w: a shard needs %s CPUs and %s MB (cpuCount and memoryMB, plus %s CPUs and %s MB for the app's executor) but the largest of the %d agents has %s CPUs and %s MB: it could never launch; lower them or add a larger agent",
			jobs.ErrInvalid, num(cfg.CPUCount), num(cfg.MemoryMB), num(exec.CPUCount), num(exec.MemoryMB),
			capa.Agents, num(capa.LargestCPUs), num(capa.LargestMem))
	}
	n := float64(cfg.ShardingTotalCount)
	if cfg.JobExecutionType == jobs.Transient && (n*cfg.CPUCount > capa.TotalCPUs || n*cfg.MemoryMB > capa.TotalMem) {
		c.Header("Warning", fmt.Sprintf(`299 elasticjob %q`, fmt.Sprintf(
			"the %d shards of an execution launch together and need %s CPUs and %s MB in all, more than the %d agents hold together (%s CPUs, %s MB): executions will wait until the cluster grows",
			cfg.ShardingTotalCount, num(n*cfg.CPUCount), num(n*cfg.MemoryMB), capa.Agents, num(capa.TotalCPUs), num(capa.TotalMem))))
	}
	return nil
}

const capacityTimeout = 3 * time.Second // the agents' list comes from the master

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

package embedded

import (
	"strings"

	"github.com/ejcloud/elasticjob/cgroups"
)

// nsPrefix starts the name of a tenant's group below the agent's.
const nsPrefix = "ns-"

// NamespaceCaps are one tenant's caps on all of its executors and tasks
// together; 0: no cap.
type NamespaceCaps struct {
	PidsMax, MemMB, DiskMB int64
}

// capsOf is the caps of the tenant whose group is nsGroup.
func capsOf(cfg Config, nsGroup string) NamespaceCaps {
	if cfg.NamespaceCaps != nil {
		return cfg.NamespaceCaps(strings.TrimPrefix(nsGroup, nsPrefix))
	}
	return NamespaceCaps{PidsMax: cfg.NamespacePidsMax, MemMB: cfg.NamespaceMemMB, DiskMB: cfg.NamespaceDiskMB}
}

// containerOf is e's container group: under Tenancy below its tenant's
// group, made here with the tenant's caps (Config.NamespaceCaps, else
// NamespacePidsMax and NamespaceMemMB; set again at each container's
// start, so a changed record binds from its next executor on), so that all of a tenant's executors and tasks together
// stay within them. The tenant's group is also what keeps a tenant from
// outgrowing its containers' pids limits in v1, where a process may be
// moved into a group over its pids.max (only fork is refused): the
// executor of one container can move its processes into another
// container of the same tenant (its uid owns both's tasks files), but not
// out of its tenant's group. Without Tenancy, directly below the agent's.
func (i *isolation) containerOf(e *executor) (*cgroups.Group, error) {
	if e.nsGroup == "" {
		return i.agent.Child(e.containerID), nil
	}
	ns := i.agent.Child(e.nsGroup)
	if err := ns.Create(); err != nil {
		return nil, err
	}
	if err := ns.Unlisted(); err != nil {
		return nil, err
	}
	caps := i.capsOf(e.nsGroup)
	if err := ns.SetLimits(cgroups.Limits{Pids: caps.PidsMax, MemoryBytes: caps.MemMB << 20}); err != nil {
		return nil, err
	}
	return ns.Child(e.containerID), nil
}

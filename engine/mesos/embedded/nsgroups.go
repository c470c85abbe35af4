package embedded

import (
	"github.com/ejcloud/elasticjob/cgroups"
)

// nsPrefix starts the name of a tenant's group below the agent's.
const nsPrefix = "ns-"

// containerOf is e's container group: under Tenancy below its tenant's
// group, made here with the tenant's caps (Config.NamespacePidsMax,
// NamespaceMemMB), so that all of a tenant's executors and tasks together
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
	if err := ns.SetLimits(i.nsCaps); err != nil {
		return nil, err
	}
	return ns.Child(e.containerID), nil
}

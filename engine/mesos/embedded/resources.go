package embedded

import (
	"fmt"
	"math"
	"strings"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/resources"
)

// agentResources builds the agent's total resources the way a real agent
// reports them: scalars cpus, mem, disk and a ports range, role "*".
func agentResources(cfg Config) (mesos.Resources, error) {
	ports, err := parsePorts(cfg.Ports)
	if err != nil {
		return nil, err
	}
	rs := mesos.Resources{
		scalar("cpus", cfg.CPUs),
		scalar("mem", cfg.MemMB),
		scalar("disk", cfg.DiskMB),
	}
	if len(ports) > 0 {
		var rr []mesos.Value_Range
		for _, p := range ports {
			rr = append(rr, mesos.Value_Range{Begin: p[0], End: p[1]})
		}
		rs = append(rs, mesos.Resource{
			Name:   "ports",
			Type:   mesos.RANGES.Enum(),
			Ranges: &mesos.Value_Ranges{Range: rr},
			Role:   strPtr("*"),
		})
	}
	return rs, nil
}

func scalar(name string, v float64) mesos.Resource {
	return mesos.Resource{
		Name:   name,
		Type:   mesos.SCALAR.Enum(),
		Scalar: &mesos.Value_Scalar{Value: v},
		Role:   strPtr("*"),
	}
}

func strPtr(s string) *string { return &s }

// normalize strips allocation info and fills in the default role, so
// resources from a scheduler compare with the agent's.
func normalize(rs []mesos.Resource) mesos.Resources {
	out := mesos.Resources(rs).Clone().Unallocate()
	for i := range out {
		if out[i].Role == nil {
			out[i].Role = strPtr("*")
		}
	}
	return mesos.Resources{}.Plus(out...)
}

// contains reports whether have holds all of want (both normalized).
func contains(have, want mesos.Resources) bool {
	return resources.ContainsAll(have, want)
}

// validateResources rejects malformed resources from a scheduler.
func validateResources(rs []mesos.Resource) error {
	if err := resources.Validate(rs...); err != nil {
		return err
	}
	for _, r := range rs {
		if r.GetReservation() != nil || len(r.GetReservations()) > 0 || r.GetDisk() != nil {
			return fmt.Errorf("resource %q: reservations and disk info are not offered by this agent", r.Name)
		}
	}
	return nil
}

// allocatable mirrors the Mesos default --min_allocatable_resources
// (cpus:0.01|mem:32): smaller pools are not offered.
func allocatable(rs mesos.Resources) bool {
	cpus, _ := resources.CPUs(rs...)
	mem, _ := resources.Memory(rs...)
	return cpus >= 0.01 || mem >= 32
}

// cloneResources deep-copies rs like mesos.Resources.Clone, without its
// reflection for the resources this master offers (name, type, a scalar,
// ranges or set value and a role).
func cloneResources(rs mesos.Resources) mesos.Resources {
	out := make(mesos.Resources, len(rs))
	for i, r := range rs {
		if r.ProviderID != nil || r.AllocationInfo != nil || r.Reservation != nil || len(r.Reservations) > 0 ||
			r.Disk != nil || r.Revocable != nil || r.Shared != nil {
			return rs.Clone()
		}
		c := mesos.Resource{Name: r.Name}
		if r.Type != nil {
			c.Type = r.Type.Enum()
		}
		if r.Scalar != nil {
			c.Scalar = &mesos.Value_Scalar{Value: r.Scalar.Value}
		}
		if r.Ranges != nil {
			c.Ranges = &mesos.Value_Ranges{Range: append([]mesos.Value_Range(nil), r.Ranges.Range...)}
		}
		if r.Set != nil {
			c.Set = &mesos.Value_Set{Item: append([]string(nil), r.Set.Item...)}
		}
		if r.Role != nil {
			c.Role = strPtr(*r.Role)
		}
		out[i] = c
	}
	return out
}

// forFramework shapes offered resources for fw: MULTI_ROLE frameworks get
// allocation_info like a real master sends (on a copy); others get rs
// itself, which is encoded before anything changes it.
func forFramework(rs mesos.Resources, fw *framework) mesos.Resources {
	if role, ok := fw.allocationRole(); ok {
		return rs.Clone().Allocate(role)
	}
	return rs
}

// scalarSum is the value of resources.Name(name).Sum(rs...), Mesos's
// fixed-point sum (three decimals), without the Resource the reducer
// allocates per element: container limits are summed over an executor's
// live tasks at every launch and end, and summary's reducers were a tenth
// of all the embedded scheduler allocated under load
// (BenchmarkContainerLimits).
func scalarSum(rs mesos.Resources, name string) float64 {
	var thousandths int64
	for i := range rs {
		if rs[i].Name == name && rs[i].Scalar != nil {
			f := rs[i].Scalar.Value * 1000 // Mesos's convertToFixed64
			if math.Abs(f) >= 0.5 {
				thousandths += int64(f + math.Copysign(0.5, f))
			}
		}
	}
	return float64(thousandths/1000) + float64(thousandths%1000)/1000 // convertToFloat64
}

// summary renders resources compactly for State and logs.
func summary(rs mesos.Resources) Resources {
	cpus, _ := resources.CPUs(rs...)
	var out Resources
	out.CPUs = cpus
	if r, ok := resources.Name("mem").Sum(rs...); ok {
		out.MemMB = r.GetScalar().GetValue()
	}
	if r, ok := resources.Name("disk").Sum(rs...); ok {
		out.DiskMB = r.GetScalar().GetValue()
	}
	if ports, ok := resources.Ports(rs...); ok {
		var parts []string
		for _, p := range ports {
			parts = append(parts, fmt.Sprintf("%d-%d", p.Begin, p.End))
		}
		out.Ports = "[" + strings.Join(parts, ", ") + "]"
	}
	return out
}

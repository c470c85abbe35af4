package cgroups

// KillListed is killListed, for the tests of package cgroups_test.
func (g *Group) KillListed(procs []int) int { return g.killListed(procs) }

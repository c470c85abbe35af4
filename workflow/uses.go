package workflow

import (
	"slices"
	"strings"
)

// Use is a workflow whose nodes run some of the jobs asked about: deleting
// those jobs (or their app) would make its next run fail.
type Use struct {
	Workflow string   `json:"workflow"`
	Nodes    []string `json:"nodes"` // the nodes running them, in the workflow's order
	Jobs     []string `json:"jobs"`  // the jobs among those asked about, sorted
}

// Uses lists the workflows of cfgs whose nodes run any of jobs, sorted by
// workflow name.
func Uses(cfgs []Config, jobs ...string) []Use {
	var out []Use
	for _, c := range cfgs {
		var u Use
		for _, n := range c.Nodes {
			if slices.Contains(jobs, n.Job) {
				u.Nodes = append(u.Nodes, n.ID)
				if !slices.Contains(u.Jobs, n.Job) {
					u.Jobs = append(u.Jobs, n.Job)
				}
			}
		}
		if len(u.Nodes) > 0 {
			u.Workflow = c.Name
			slices.Sort(u.Jobs)
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b Use) int { return strings.Compare(a.Workflow, b.Workflow) })
	return out
}

// DescribeUses names the workflows and their nodes, for a message:
// "workflow etl (node extract: job load), workflow nightly (nodes a, b: job
// load)".
func DescribeUses(uses []Use) string {
	parts := make([]string, 0, len(uses))
	for _, u := range uses {
		nodes := "node "
		if len(u.Nodes) > 1 {
			nodes = "nodes "
		}
		jobs := "job "
		if len(u.Jobs) > 1 {
			jobs = "jobs "
		}
		parts = append(parts, "workflow "+u.Workflow+" ("+nodes+strings.Join(u.Nodes, ", ")+": "+jobs+strings.Join(u.Jobs, ", ")+")")
	}
	return strings.Join(parts, ", ")
}

// UseNames lists the workflows' names.
func UseNames(uses []Use) []string {
	out := make([]string, len(uses))
	for i, u := range uses {
		out[i] = u.Workflow
	}
	return out
}

package teams

import (
	"flag"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// Options: the teams scenario (namespaces' fires under others' bursts).
type Options struct {
	teamsBefore        string          // teams: a bin dir of the code before, run alternately with binDir's
	teamsParts         map[string]bool // teams: two-team, whole-guarantee, weights
	teamsRepeats       int
	teamsCPUs          float64
	teamsBurstMax      time.Duration
	teamsWeightsWindow time.Duration

	teamsPartsFlag string
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.teamsBefore, "teams-before", "", "teams: a bin directory built from the code before, run alternately with -bin's: git worktree add /tmp/before <commit> && make -C /tmp/before build")
	fs.StringVar(&p.teamsPartsFlag, "teams-parts", "two-team,whole-guarantee,weights", "teams: the scenarios to run")
	fs.IntVar(&p.teamsRepeats, "teams-repeats", 1, "teams: runs of each scenario (per side)")
	fs.Float64Var(&p.teamsCPUs, "teams-cpus", 2, "teams: CPUs the embedded agent offers (--embedded-cpus)")
	fs.DurationVar(&p.teamsBurstMax, "teams-burst-max", 3*time.Minute, "teams: bound on a burst's runs")
	fs.DurationVar(&p.teamsWeightsWindow, "teams-weights-window", 5*time.Minute, "teams: the weights scenario's measurement window")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error {
	p.teamsParts = bench.Set(p.teamsPartsFlag)
	return nil
}

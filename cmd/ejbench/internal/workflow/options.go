package workflow

import (
	"flag"
)

// Options: the workflow scenario.
type Options struct {
	wfRuns       int
	wfConcurrent int
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.wfRuns, "wf-runs", 30, "sequential runs of the 10-node chain (the fan-out gets a quarter) in the workflow scenario")
	fs.IntVar(&p.wfConcurrent, "wf-concurrent", 200, "concurrent runs of the 10-node chain in the workflow scenario")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }

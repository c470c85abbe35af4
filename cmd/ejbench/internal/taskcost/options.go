package taskcost

import (
	"flag"
	"time"
)

// Options: the taskcost scenario.
type Options struct {
	before  string // a bin dir of the code before, run alternately with -bin's
	repeats int
	jobs    int
	apps    int
	rate    int
	window  time.Duration
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.before, "taskcost-before", "", "taskcost: a bin directory built from the code before, run alternately with -bin's: git worktree add /tmp/before <commit> && make -C /tmp/before build")
	fs.IntVar(&p.repeats, "taskcost-repeats", 1, "taskcost: runs per side")
	fs.IntVar(&p.jobs, "taskcost-jobs", 40, "taskcost: one-shard transient jobs without cron, triggered round-robin")
	fs.IntVar(&p.apps, "taskcost-apps", 4, "taskcost: apps (so executors) the jobs are spread over")
	fs.IntVar(&p.rate, "taskcost-rate", 400, "taskcost: API triggers per second over the jobs (more than the machine finishes: saturation)")
	fs.DurationVar(&p.window, "taskcost-window", 20*time.Second, "taskcost: the measurement (and profile) window")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }

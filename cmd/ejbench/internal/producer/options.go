package producer

import (
	"flag"
	"time"
)

// Options: the register and producer scenarios.
type Options struct {
	jobs      int
	workflows int
	window    time.Duration
	settle    time.Duration
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.jobs, "jobs", 100_000, "jobs to register (register/producer)")
	fs.IntVar(&p.workflows, "producer-workflows", 100, "producer: workflows with crons beside the jobs, each firing every 10 s (0: none)")
	fs.DurationVar(&p.window, "window", 75*time.Second, "producer observation window")
	fs.DurationVar(&p.settle, "settle", 5*time.Second, "pause between registration and the producer window")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }

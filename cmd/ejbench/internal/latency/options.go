package latency

import (
	"flag"
	"time"
)

// Options: the latency scenario's series.
type Options struct {
	triggers int
	gap      time.Duration
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.triggers, "triggers", 200, "sequential triggers per latency series")
	fs.DurationVar(&p.gap, "gap", 50*time.Millisecond, "idle pause between sequential triggers (latency)")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }

// Triggers is -triggers: the sequential triggers of a series (the java
// scenario runs as many, at most 40).
func (p *Options) Triggers() int { return p.triggers }

// Gap is -gap: the idle pause between sequential triggers.
func (p *Options) Gap() time.Duration { return p.gap }

package gobench

import (
	"flag"
)

// Options: the packages' Go benchmarks.
type Options struct{ benchtime string }

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.benchtime, "benchtime", "", "-benchtime for the Go benchmarks (default: per package, short)")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }

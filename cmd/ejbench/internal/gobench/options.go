package gobench

import (
	"flag"
)

// Options: the packages' Go benchmarks.
type Options struct{ benchtime string }

func (p *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.benchtime, "benchtime", "", "-benchtime for the Go benchmarks (default: per package, short)")
}

func (p *Options) Parse() error { return nil }

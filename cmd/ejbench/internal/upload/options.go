package upload

import (
	"flag"
)

// Options: the package scenario.
type Options struct{ packageMB int }

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.packageMB, "package-mb", 100, "payload size in MB of the package scenario's upload")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }

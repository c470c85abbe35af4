package upload

import (
	"flag"
)

// Options: the package scenario.
type Options struct{ packageMB int }

func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.packageMB, "package-mb", 100, "payload size in MB of the package scenario's upload")
}

func (p *Options) Parse() error { return nil }

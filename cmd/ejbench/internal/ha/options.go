package ha

import (
	"flag"
	"time"
)

// Options: the ha scenario.
type Options struct {
	haKills     int // leader kills at a 2 s session timeout
	haKillsSlow int // leader kills at the default 15 s
	haKillsEtcd int // leader kills on the etcd shape
	haBurn      time.Duration
	haWrites    int
	haJobs      int
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.haKills, "ha-kills", 5, "leader kills at a 2 s session timeout (ha)")
	fs.IntVar(&p.haKillsSlow, "ha-kills-default", 2, "leader kills at the default 15 s session timeout (ha)")
	fs.IntVar(&p.haKillsEtcd, "ha-kills-etcd", 20, "leader kills on the etcd shape, a member in each scheduler (ha; 0 skips it)")
	fs.DurationVar(&p.haBurn, "ha-burn", 30*time.Second, "after the etcd shape's kills, run two CPU burners per core this long and count elections (ha; 0 skips it)")
	fs.IntVar(&p.haWrites, "ha-writes", 300, "sequential writes each to the leader and to a standby (ha)")
	fs.IntVar(&p.haJobs, "ha-jobs", 10_000, "job registrations on the ZooKeeper registry through the leader, and as many through a standby (ha)")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }
